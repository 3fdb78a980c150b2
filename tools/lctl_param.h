// lctl get_param / set_param over every place a parameter lives:
//   - statistics kept by the daemons (obdfilter.*.stats, *.job_stats, mdt.*.md_stats):
//     read live with OP_STATS_GET from the MDS and from every OSS in the MGS's OST table;
//   - the mounts on this host (llite.*, osc.*, jobid_var): through the extended attributes
//     of each mount's root that the FUSE client answers (client/fuse/llite_params.h);
//   - the tunables kept by the MGS (lctl set_param -P), with OP_MGS_GET_PARAM/SET_PARAM.
// get_param shows the live names first; a name the MGS stores is shown when no live source
// has a parameter of that name. set_param NAME=clear on statistics clears them wherever they
// live; a client tunable without -P applies to this host's mounts only (none: it goes to the
// MGS, as -P); anything else is checked and stored by the MGS, which refuses unknown names.
// Thread-safety: single-threaded command-line code.
#pragma once

#include <memory>
#include <string>

#include "client/client.h"

namespace stria::tools {

// argv[0] is "get_param"/"set_param". Exit status as lctl's.
int LctlGetParam(client::Client* mgs, int argc, char** argv);
int LctlSetParam(client::Client* mgs, int argc, char** argv);

}  // namespace stria::tools
