// How lfs and lctl reach a filesystem: a libstria Client for a mount or an MGS NID list, and
// the small MDS helpers the commands share.
//
// Tools fail fast: their Client gives up on an unreachable MGS/MDS after kToolDeadlineMs
// instead of the library's long default (STRIA_TOOL_TIMEOUT_MS overrides it).
// Thread-safety: the functions are; a ToolSession is used by one thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "client/metadata.h"
#include "common/status.h"
#include "proto/stria.pb.h"
#include "tools/mount_info.h"

namespace stria::tools {

inline constexpr int kToolDeadlineMs = 15'000;

// Connects to the MGS at `nids` ("NID[,NID]"); fsname may be empty (any).
// The cluster key tools prove when they connect on their own (docs/security.md): the file
// named by --key-file (which sets $STRIA_KEY_FILE), else $STRIA_KEY_FILE, else
// /etc/stria/stria.key if it exists; none otherwise. Sets opts->keys and the role "tool". A
// key file that cannot be read ends the program with a message (exit 1): a tool must not
// silently connect without the key it was given.
void UseToolKey(lnet::ClientOptions* opts);

Result<std::unique_ptr<client::Client>> ConnectNids(std::string_view nids, std::string_view fsname);

// The exit status for a failed operation: the errno of the status, as lfs returns -rc.
int ExitCode(const Status& st);

// A filesystem path's inode and layout (ResolvePath plus GETATTR for a file's layout).
struct Resolved {
  proto::Attr attr;
  proto::Layout layout;
  bool is_dir() const;
  bool is_reg() const;
};

// Connections to the mounts the paths of one command lie on, one Client per mount.
class ToolSession {
 public:
  ToolSession();

  // The Client for the mount under `where` (connects on first use).
  Result<client::Client*> ClientFor(const StriaPath& where);

  // A path a user gave: where it lies (LocatePath) and the Client of that mount.
  struct PathClient {
    StriaPath where;
    client::Client* client = nullptr;
  };
  Result<PathClient> Locate(const std::string& path);

  // Resolves an absolute path inside the filesystem ("/a/b").
  Result<Resolved> Resolve(client::Client* c, std::string_view fs_path);

  // A file's layout with its objects (GETATTR when the lookup gave none).
  Result<proto::Layout> FileLayout(client::Client* c, const proto::Attr& attr);

  // Every entry of a directory (READDIR, all pages); plus: with attributes, and files'
  // layouts, in the same replies.
  Result<std::vector<proto::DirEntry>> ListDir(client::Client* c, uint64_t ino, bool plus = false);

  const proto::Credentials& cred() const { return cred_; }

 private:
  proto::Credentials cred_;
  std::map<std::string, std::unique_ptr<client::Client>> clients_;  // by mount source
};

// Splits "/a/b/c" into ("/a/b", "c"); "/c" into ("/", "c").
std::pair<std::string, std::string> SplitParent(std::string_view fs_path);

}  // namespace stria::tools
