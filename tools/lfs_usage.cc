// Usage texts of the lfs subcommands (lfs help COMMAND, and after a usage error).
#include <cstdio>
#include <string>

#include "tools/lfs_commands.h"

namespace stria::tools {

int UsageError(const char* command, const char* why) {
  if (why != nullptr && *why != '\0') std::fprintf(stderr, "lfs %s: %s\n", command, why);
  std::fputs(LfsUsage(command), stderr);
  return kUsageError;
}

const char* LfsUsage(const char* command) {
  const std::string cmd = command;
  if (cmd == "setstripe") {
    return "usage: lfs setstripe [--stripe-count|-c STRIPE_COUNT] [--stripe-size|-S SIZE]\n"
           "                     [--stripe-index|-i START_OST_IDX] [--pool|-p POOL] "
           "FILENAME|DIRECTORY...\n"
           "       lfs setstripe --component-end|-E END1 [STRIPE_OPTIONS] [-E END2 "
           "[STRIPE_OPTIONS] ...] FILENAME|DIRECTORY...\n"
           "       lfs setstripe --yaml|-y TEMPLATE FILENAME|DIRECTORY...\n"
           "       lfs setstripe -d DIRECTORY...\n"
           "\t-L mdt: the component's bytes live on the MDS (Data-on-MDT; only the first,\n"
           "\t     at most lod.*.dom_stripesize, 1 MiB by default); -L mdt alone: a file all\n"
           "\t     on the MDS\n"
           "\tEND: where a component of a composite (PFL) layout ends, a size (multiple of "
           "64 KiB)\n\t     or -1/EOF; each -E starts the next component where the last "
           "ended\n"
           "\tSTRIPE_COUNT: number of OSTs to stripe over (-1 = all)\n"
           "\tSIZE: stripe size in bytes, a multiple of 64 KiB; k, M or G suffix\n"
           "\tSTART_OST_IDX: the OST of the first stripe (-1 = let the MDS choose)\n"
           "\tOn a directory: sets the default layout its new files inherit (-d removes it).\n"
           "\t-N[COUNT]: mirrors, as lfs mirror create.\n"
           "\tOn a path that does not exist: creates an empty file with that layout.\n";
  }
  if (cmd == "getstripe") {
    return "usage: lfs getstripe [--stripe-count|-c] [--stripe-size|-S] [--stripe-index|-i]\n"
           "                     [--pool|-p] [--generation|-g] [--layout|-L] [--directory|-d]\n"
           "                     [--quiet|-q] [--recursive|-r] [--component-id|-I ID]\n"
           "                     [--component-count] [--fid|-F] [--verbose|-v] [--yaml|-y]\n"
           "                     [--component-start [+-]N] [--component-end [+-]N|EOF]\n"
           "                     FILENAME|DIRECTORY...\n";
  }
  if (cmd == "df") {
    return "usage: lfs df [--human-readable|-h] [--inodes|-i] [--pool|-p [FSNAME.]POOL] [PATH]\n"
           "\tShows the space (or inodes) of each MDT and OST of the filesystem under PATH,\n"
           "\tor of every mounted Stria filesystem; --pool: only the pool's OSTs.\n";
  }
  if (cmd == "find") {
    return "usage: lfs find DIRECTORY [[!] --type|-t f|d|l] [[!] --name|-n GLOB] [[!] --iname "
           "GLOB]\n"
           "                [[!] --size|-s [+-]N[kMGT]] [[!] --mtime|--atime|--ctime [+-]DAYS]\n"
           "                [[!] --uid|--gid N] [[!] --user|--group NAME]\n"
           "                [[!] --stripe-count|-c [+-]N] [[!] --stripe-size|-S [+-]SIZE]\n"
           "                [[!] --component-count [+-]N] [[!] --layout|-L raid0|mdt]\n"
           "                [[!] --pool POOL] [[!] --ost|-O INDEX[,INDEX...]]\n"
           "                [[!] --mirror-count [+-]N] [[!] --mirror-state [^]ro|wp|sp]\n"
           "                [--maxdepth|-D N] [--print0|-0]\n"
           "\tSingle-dash spellings (-name, -size, ...) work too; '!' negates the next test.\n"
           "\tA composite file matches --stripe-count/--stripe-size when one of its\n"
           "\tinstantiated components does; a plain file has 0 components.\n";
  }
  if (cmd == "path2fid") {
    return "usage: lfs path2fid [--parents] FILE...\n"
           "\tShows the FID of each FILE; --parents shows each name as [PARENT_FID]/NAME.\n";
  }
  if (cmd == "fid2path") {
    return "usage: lfs fid2path [--print-fid|-f] [--print-link|-c] [--link|-l LINKNO] "
           "FSNAME|ROOT FID...\n"
           "\tShows every path of each FID (all names of a hard-linked file), under the\n"
           "\tmount point ROOT, or from the root of filesystem FSNAME. Root only.\n";
  }
  if (cmd == "migrate") {
    return "usage: lfs migrate [--stripe-count|-c N] [--stripe-size|-S SIZE] [--stripe-index|-i "
           "IDX]\n"
           "                   [--pool|-p POOL] [--layout|-L raid0|mdt] [-E END [STRIPE_OPTIONS] ...]\n"
           "                   [--non-block|-n] [--recursive|-R] [FILE|DIRECTORY...]\n"
           "\tWithout FILE, the paths come from standard input, one per line.\n"
           "\tA Data-on-MDT file can be moved to OSTs; a layout with -L mdt is refused\n"
           "\t(EOPNOTSUPP).\n"
           "\tRestripes each FILE online: the inode, FID and bytes stay, the layout generation\n"
           "\tgrows, the old objects are destroyed. A writer makes --non-block fail with EBUSY;\n"
           "\twithout it, lfs migrate waits for the writer and tries again.\n";
  }
  if (cmd == "swap_layouts") {
    return "usage: lfs swap_layouts FILE1 FILE2\n"
           "\tThe files exchange their layouts, bytes and sizes; neither may be open for\n"
           "\twriting (EBUSY).\n";
  }
  if (cmd == "data_version") {
    return "usage: lfs data_version FILE\n"
           "\tA number that changes whenever the file's bytes can have changed.\n";
  }
  if (cmd == "manifest") {
    return "usage: lfs manifest create [-j N] DIR > MANIFEST\n"
           "       lfs manifest verify [-j N] [-q] MANIFEST [DIR]\n"
           "\tcreate: the SHA-256 of every file under DIR, in sha256sum's format.\n"
           "\tverify: checks the files MANIFEST lists (under DIR, by default the\n"
           "\tmanifest's directory), N in parallel; lists MISSING, MISMATCH and EXTRA\n"
           "\tfiles and exits 1 if there is any.\n";
  }
  if (cmd == "osts")
    return "usage: lfs osts [PATH]\n\tLists the OSTs and whether each is active.\n";
  if (cmd == "mdts") return "usage: lfs mdts [PATH]\n\tLists the MDTs.\n";
  if (cmd == "check") {
    return "usage: lfs check osts|mds|mgts|servers [PATH]\n"
           "\tPings each target and prints NAME active. or NAME inactive.\n";
  }
  if (cmd == "mirror") {
    return "usage: lfs mirror create|extend|split|resync|verify|read|write ...\n"
           "\tRun 'lfs help mirror SUBCOMMAND' ('lfs help \"mirror create\"') for each.\n";
  }
  if (cmd == "mirror create") {
    return "usage: lfs mirror create --mirror-count|-N[COUNT] [SETSTRIPE_OPTIONS] "
           "[--flags=prefer]\n"
           "                         [-N[COUNT] ...] FILENAME|DIRECTORY\n"
           "\tCOUNT mirrors (default 1) per -N, each laid out by the options after it\n"
           "\t(-c, -S, -i, -p, -E as lfs setstripe); at most 16 mirrors. A directory gets\n"
           "\tthe mirrored default layout its new files inherit.\n";
  }
  if (cmd == "mirror extend") {
    return "usage: lfs mirror extend --mirror-count|-N[COUNT] [SETSTRIPE_OPTIONS] FILE...\n"
           "\tAdds COUNT mirrors to each FILE; the MDS copies the bytes into them.\n";
  }
  if (cmd == "mirror split") {
    return "usage: lfs mirror split --mirror-id ID [--destroy|-d] [-f NEW_FILE] FILE\n"
           "\tTakes mirror ID out of FILE: destroyed (-d), or kept as NEW_FILE (by default\n"
           "\tFILE.mirror~ID). The last mirror, or one holding the only good copy of some\n"
           "\tbytes, cannot be split.\n";
  }
  if (cmd == "mirror resync") {
    return "usage: lfs mirror resync FILE...\n"
           "\tCopies the good bytes into every stale range of FILE's mirrors now (the MDS\n"
           "\tdoes it by itself when their OSTs return). EBUSY while FILE is open for\n"
           "\twriting.\n";
  }
  if (cmd == "mirror verify") {
    return "usage: lfs mirror verify [--verbose|-v] FILE...\n"
           "\tCompares the mirrors of each FILE; prints each differing range and each stale\n"
           "\tmirror, and exits 1 if there is any.\n";
  }
  if (cmd == "mirror read") {
    return "usage: lfs mirror read --mirror-id ID [--outfile|-o OUT] FILE\n"
           "\tThe bytes of FILE as mirror ID holds them, to OUT or stdout.\n";
  }
  if (cmd == "mirror write") {
    return "usage: lfs mirror write --mirror-id ID [--inputfile|-i IN] FILE\n"
           "\tWrites IN (or stdin) from offset 0 into mirror ID only; the other mirrors are\n"
           "\tmarked stale over those bytes until a resync copies them.\n";
  }
  if (cmd == "help") return "usage: lfs help [COMMAND]\n";
  return "";
}

}  // namespace stria::tools
