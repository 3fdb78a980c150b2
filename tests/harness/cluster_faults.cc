// The fault-injection parts of Cluster (tests/harness/cluster.h): OSSes in network
// namespaces joined by veth pairs, cutting and healing their links, and tmpfs OSTs.
#include <fcntl.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/harness/cluster.h"

namespace stria::testing {

extern const char* const kIpPath = "/usr/sbin/ip";

Status RunIp(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kIpPath};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r = RunCommand(argv);
  if (r.exit_code == 0) return Status::Ok();
  std::string cmd;
  for (auto& a : argv) cmd += a + " ";
  return Status(Code::kInternal, cmd + "failed (" + std::to_string(r.exit_code) + "): " + r.err);
}

namespace {

const char* const kIp = kIpPath;
Status Ip(const std::vector<std::string>& args) { return RunIp(args); }

}  // namespace

bool NetnsUsable(std::string* why) {
  if (geteuid() != 0) {
    *why = "network namespaces need root";
    return false;
  }
  if (access(kIp, X_OK) != 0) {
    *why = std::string(kIp) + " (iproute2) is missing";
    return false;
  }
  const std::string probe = "stria-probe-" + std::to_string(getpid());
  Status st = Ip({"netns", "add", probe});
  if (st.ok()) {
    const std::string h = "sp" + std::to_string(getpid()) + "h";
    st = Ip({"link", "add", h, "type", "veth", "peer", "name", "sp" + std::to_string(getpid()) + "n"});
    if (st.ok()) Ip({"link", "del", h}).IgnoreError();
    Ip({"netns", "del", probe}).IgnoreError();
  }
  if (!st.ok()) *why = "ip netns/veth not usable here: " + st.ToString();
  return st.ok();
}

Status Cluster::SetUpTmpfs() {
  if (tmpfs_ready_) return Status::Ok();
  for (auto& [idx, bytes] : options_.tmpfs_ost_bytes) {
    if (idx < 0 || idx >= num_osts()) return Status(Code::kInval, "no OST " + std::to_string(idx));
    CommandResult r = RunCommand({"/bin/mount", "-t", "tmpfs", "-o",
                                  "size=" + std::to_string(bytes) + ",mode=0755", "tmpfs",
                                  ost_dir(idx)});
    if (r.exit_code != 0) {
      return Status(Code::kInternal, "mount tmpfs on " + ost_dir(idx) + ": " + r.err);
    }
    tmpfs_mounts_.push_back(ost_dir(idx));
  }
  tmpfs_ready_ = true;
  return Status::Ok();
}

// Each namespace gets a veth pair on a /30 of 10.211.0.0/16 that no interface of ours uses
// (several test processes may run at once): .1 on our side, .2 inside.
Status Cluster::SetUpNetns() {
  if (netns_ready_ || netns_.empty()) return Status::Ok();
  std::string why;
  if (!NetnsUsable(&why)) return Status(Code::kNotSup, why);
  CommandResult addrs = RunCommand({kIp, "-o", "-4", "addr", "show"});
  uint32_t slot = (static_cast<uint32_t>(getpid()) * 7) % 16384;
  for (Netns& n : netns_) {
    for (int tries = 0;; ++tries, slot = (slot + 1) % 16384) {
      const std::string base =
          "10.211." + std::to_string(slot / 64) + "." + std::to_string((slot % 64) * 4);
      const std::string host =
          "10.211." + std::to_string(slot / 64) + "." + std::to_string((slot % 64) * 4 + 1);
      if (addrs.out.find(" " + host + "/") == std::string::npos || tries > 16384) {
        n.host_addr = host;
        n.ns_addr = "10.211." + std::to_string(slot / 64) + "." + std::to_string((slot % 64) * 4 + 2);
        slot = (slot + 1) % 16384;
        break;
      }
    }
    Ip({"netns", "del", n.name}).IgnoreError();  // a leftover of a killed run with our pid
    STRIA_RETURN_IF_ERROR(Ip({"netns", "add", n.name}));
    n.up = true;
    STRIA_RETURN_IF_ERROR(Ip({"link", "add", n.host_if, "type", "veth", "peer", "name", n.ns_if}));
    STRIA_RETURN_IF_ERROR(Ip({"link", "set", n.ns_if, "netns", n.name}));
    STRIA_RETURN_IF_ERROR(Ip({"addr", "add", n.host_addr + "/30", "dev", n.host_if}));
    STRIA_RETURN_IF_ERROR(Ip({"link", "set", n.host_if, "up"}));
    STRIA_RETURN_IF_ERROR(Ip({"netns", "exec", n.name, kIp, "addr", "add", n.ns_addr + "/30",
                              "dev", n.ns_if}));
    STRIA_RETURN_IF_ERROR(Ip({"netns", "exec", n.name, kIp, "link", "set", n.ns_if, "up"}));
    STRIA_RETURN_IF_ERROR(Ip({"netns", "exec", n.name, kIp, "link", "set", "lo", "up"}));
  }
  netns_ready_ = true;
  return Status::Ok();
}

const Cluster::Netns* Cluster::NetnsOf(int i) const {
  for (const Netns& n : netns_) {
    if (n.oss == i) return &n;
  }
  return nullptr;
}

bool Cluster::InNetns(int i) const { return NetnsOf(i) != nullptr; }

namespace {

// Sets or clears IFF_UP on interface `name` by ioctl. No fork: a child forked while another
// thread holds a file open in a mount would send FUSE FLUSH when it closes its inherited
// copy, and that FLUSH waits for the very OSS this call is about to reconnect.
Status SetLinkUp(const std::string& name, bool up) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus("socket", errno);
  ifreq ifr {};
  snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name.c_str());
  Status st;
  if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) {
    st = ErrnoStatus("SIOCGIFFLAGS " + name, errno);
  } else {
    if (up) {
      ifr.ifr_flags |= IFF_UP;
    } else {
      ifr.ifr_flags &= ~IFF_UP;
    }
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) st = ErrnoStatus("SIOCSIFFLAGS " + name, errno);
  }
  ::close(fd);
  return st;
}

}  // namespace

Status Cluster::CutOss(int i) {
  const Netns* n = NetnsOf(i);
  if (!n || !n->up) return Status(Code::kInval, "OSS " + std::to_string(i) + " has no netns");
  return SetLinkUp(n->host_if, false);
}

Status Cluster::HealOss(int i) {
  const Netns* n = NetnsOf(i);
  if (!n || !n->up) return Status(Code::kInval, "OSS " + std::to_string(i) + " has no netns");
  return SetLinkUp(n->host_if, true);
}

}  // namespace stria::testing
