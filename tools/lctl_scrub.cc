#include "tools/lctl_scrub.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "lnet/nid.h"
#include "lnet/rpc_client.h"
#include "proto/stria.pb.h"
#include "tools/fs_connect.h"

namespace stria::tools {
namespace {

Result<long> ParseNumber(const char* what, const char* text, long max) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < 0 || v > max) {
    return Status(Code::kInval, std::string("scrub: bad ") + what + " '" + text + "'");
  }
  return v;
}

std::string OstName(uint32_t index) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "OST%04x", index);
  return buf;
}

// One OST's scrub over a connection of its own: a scrub may take far longer than the
// library's RPC timeout, and a timed-out scrub must not be resent.
Result<proto::OstScrubReply> ScrubOne(const proto::OstInfo& ost, const std::string& fsname,
                                      int timeout_s) {
  STRIA_ASSIGN_OR_RETURN(lnet::Nid nid, lnet::Nid::Parse(ost.nid()));
  lnet::ClientOptions opts;
  opts.fsname = fsname;
  opts.rpc_timeout_ms = timeout_s * 1000;
  opts.retry_deadline_ms = timeout_s * 1000;
  opts.max_connections = 1;
  UseToolKey(&opts);
  lnet::RpcClient rpc(nid, opts);
  proto::OstScrubRequest req;
  req.set_ost_idx(ost.index());
  proto::OstScrubReply rep;
  STRIA_RETURN_IF_ERROR(rpc.Call(proto::OP_OST_SCRUB, req, &rep));
  return rep;
}

void PrintReport(const proto::OstScrubReply& rep) {
  const std::string name = OstName(rep.ost_idx());
  std::printf("%s: %llu objects, %llu bytes checked: ", name.c_str(),
              static_cast<unsigned long long>(rep.objects()),
              static_cast<unsigned long long>(rep.bytes()));
  if (rep.corrupt_objects() == 0) {
    std::printf("clean\n");
    return;
  }
  std::printf("%llu corrupt\n", static_cast<unsigned long long>(rep.corrupt_objects()));
  for (const proto::OstScrubCorruption& c : rep.corruptions()) {
    std::printf("corrupt: %s object %llu group %llu offset %llu", name.c_str(),
                static_cast<unsigned long long>(c.object().object_id()),
                static_cast<unsigned long long>(c.object().group()),
                static_cast<unsigned long long>(c.offset()));
    if (!c.error().empty()) {
      std::printf(" (unreadable: %s)\n", c.error().c_str());
    } else {
      std::printf(" (%llu bad 4 KiB chunks)\n", static_cast<unsigned long long>(c.bad_chunks()));
    }
  }
  if (rep.corrupt_objects() > static_cast<uint64_t>(rep.corruptions_size())) {
    std::printf("%s: %llu more corrupt objects not listed (see the OSS log)\n", name.c_str(),
                static_cast<unsigned long long>(rep.corrupt_objects() - rep.corruptions_size()));
  }
}

}  // namespace

Result<ScrubArgs> ParseScrubArgs(int argc, char** argv) {
  ScrubArgs args;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--ost") == 0 && has_value) {
      STRIA_ASSIGN_OR_RETURN(long v, ParseNumber("OST index", argv[++i], 0xffff));
      args.ost = static_cast<uint32_t>(v);
    } else if (std::strcmp(argv[i], "--timeout") == 0 && has_value) {
      STRIA_ASSIGN_OR_RETURN(long v, ParseNumber("timeout", argv[++i], 7 * 24 * 3600));
      if (v == 0) return Status(Code::kInval, "scrub: the timeout must be at least 1 second");
      args.timeout_s = static_cast<int>(v);
    } else {
      return Status(Code::kInval,
                    std::string("scrub: unknown or incomplete option '") + argv[i] + "'");
    }
  }
  return args;
}

int LctlScrub(client::Client* c, const ScrubArgs& args) {
  auto config = c->GetConfig(/*refresh=*/true);
  if (!config.ok()) {
    std::fprintf(stderr, "lctl scrub: %s\n", config.status().ToString().c_str());
    return ExitCode(config.status());
  }
  std::map<uint32_t, const proto::OstInfo*> osts;
  for (const proto::OstInfo& o : config->osts()) {
    if (!args.ost || o.index() == *args.ost) osts[o.index()] = &o;
  }
  if (osts.empty()) {
    const Status st(Code::kNoOst, args.ost ? "no such OST " + OstName(*args.ost) : "no OSTs");
    std::fprintf(stderr, "lctl scrub: %s\n", st.ToString().c_str());
    return ExitCode(st);
  }
  bool corrupt = false;
  int failed = 0;
  for (const auto& [index, ost] : osts) {
    Result<proto::OstScrubReply> rep = ScrubOne(*ost, config->fsname(), args.timeout_s);
    if (!rep.ok()) {
      std::fprintf(stderr, "lctl scrub: %s (%s): %s\n", OstName(index).c_str(), ost->nid().c_str(),
                   rep.status().ToString().c_str());
      if (failed == 0) failed = ExitCode(rep.status());
      continue;
    }
    PrintReport(*rep);
    corrupt = corrupt || rep->corrupt_objects() > 0;
  }
  if (corrupt) return ExitCode(Status(Code::kCorrupt, "corruption found"));
  return failed;
}

}  // namespace stria::tools
