#include "client/mount_spec.h"

#include <cctype>

namespace stria::client {

Status ValidateFsname(std::string_view fsname) {
  if (fsname.empty()) return Status(Code::kInval, "the filesystem name is empty");
  if (fsname.size() > kMaxFsnameLen) {
    return Status(Code::kInval, "filesystem name '" + std::string(fsname) + "' is longer than " +
                                    std::to_string(kMaxFsnameLen) + " characters");
  }
  for (char c : fsname) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      return Status(Code::kInval, "filesystem name '" + std::string(fsname) +
                                      "' may hold only letters, digits, '_' and '-'");
    }
  }
  return Status::Ok();
}

Result<MountSpec> ParseMountSpec(std::string_view device) {
  const std::string usage = " (expected NID[,NID...]:/fsname, e.g. 127.0.0.1@tcp:9880:/training)";
  const size_t sep = device.rfind(":/");
  if (sep == std::string_view::npos) {
    return Status(Code::kInval, "device '" + std::string(device) + "' has no ':/'" + usage);
  }
  const std::string_view nids = device.substr(0, sep);
  const std::string_view fsname = device.substr(sep + 2);
  if (nids.empty()) {
    return Status(Code::kInval, "device '" + std::string(device) + "' names no MGS NID" + usage);
  }
  if (Status st = ValidateFsname(fsname); !st.ok()) {
    return Status(Code::kInval, "device '" + std::string(device) + "': " + st.message() + usage);
  }
  auto list = lnet::ParseNidList(nids);
  if (!list.ok()) {
    return Status(Code::kInval, "device '" + std::string(device) + "': bad MGS NID list '" +
                                    std::string(nids) + "': " + list.status().message() + usage);
  }
  MountSpec spec;
  spec.mgs_nids = std::move(*list);
  spec.fsname = std::string(fsname);
  return spec;
}

}  // namespace stria::client
