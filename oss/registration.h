// Registrar: keeps the MGS told which OSTs this OSS serves, and where.
//
// At start and then every interval (5 s: the heartbeat, which is also how a restarted MGS
// learns the OST table again) it sends OP_MGS_REGISTER_OST for each OST to the MGS (the
// first NID of the list that answers; the last one that answered is tried first). Each call
// has a short retry deadline, so a missing MGS costs a log line and a retry at the next beat,
// never a stuck OSS. An OST not formatted yet (announced with an empty fsname) first asks the
// MGS for its configuration (OP_MGS_GET_CONFIG, for the fsname), has the Format callback
// format it with that fsname, and is then registered like the others; the fsname in the
// MGS's RegisterOstReply is checked against the OST's own. Each registration carries the
// OST's free and total bytes (the Space callback), which the MDS allocator uses to avoid
// full OSTs.
//
// Thread-safety: SetOst/RegisterAll/Start/Stop from any thread; the callback runs on the
// thread doing a round, never concurrently with itself (rounds are serialized).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "lnet/auth.h"
#include "lnet/nid.h"
#include "lnet/rpc_client.h"
#include "oss/ost_meta.h"

namespace stria::oss {

struct RegistrationOptions {
  std::vector<lnet::Nid> mgs_nids;  // at least one
  std::string nid;                  // this OSS's NID as peers reach it ("10.0.0.5@tcp:9401")
  int interval_ms = 5'000;          // heartbeat period
  int rpc_deadline_ms = 2'000;      // one registration's retry deadline
  std::shared_ptr<const lnet::KeyRing> keys;  // the cluster key, proved to the MGS; null: none
};

class Registrar {
 public:
  // Formats unformatted OST `index` for the MGS's filesystem; returns the stored meta.
  using FormatFn = std::function<Result<OstMeta>(uint32_t index, const std::string& fsname)>;
  // The free and total bytes of OST `index` now; false when unknown (then 0/0 is sent).
  using SpaceFn = std::function<bool(uint32_t index, uint64_t* free, uint64_t* total)>;

  Registrar(RegistrationOptions options, FormatFn format, SpaceFn space = {});
  ~Registrar();  // Stop()s
  Registrar(const Registrar&) = delete;
  Registrar& operator=(const Registrar&) = delete;

  // Adds (or updates) an OST to announce; fsname is empty while it is unformatted.
  void SetOst(uint32_t index, const std::string& uuid, const std::string& fsname);

  // Registers every OST once, now, on the calling thread. OK when all succeeded.
  Status RegisterAll();

  // Starts the heartbeat thread (its first round runs at once).
  void Start();

  // Stops the thread; idempotent.
  void Stop();

  // Not OK once the MGS refused an OST for good: it names another filesystem (kWrongFs) or
  // another OST directory holds its index (kExist). The OSS must not serve it: stria-oss
  // exits with this message.
  Status fatal();

 private:
  struct Ost {
    uint32_t index;
    std::string uuid;
    std::string fsname;
    bool registered = false;  // last attempt succeeded (for logging transitions)
    Code last_error = Code::kOk;  // last failure's code, so a repeated one is logged once
  };

  // One call to the first MGS NID that answers (the last good one first).
  template <typename Req, typename Rep>
  Status CallMgs(uint16_t opcode, const Req& req, Rep* rep);
  Status RegisterOne(Ost& ost);
  void Loop();

  const RegistrationOptions options_;
  const FormatFn format_;
  const SpaceFn space_;
  std::vector<std::unique_ptr<lnet::RpcClient>> clients_;  // one per MGS NID
  size_t preferred_ = 0;                                   // used by one thread at a time

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Ost> osts_;  // GUARDED_BY(mu_)
  bool stop_ = false;      // GUARDED_BY(mu_)
  Status fatal_;           // GUARDED_BY(mu_)
  std::mutex round_mu_;    // serializes rounds (RegisterAll vs the thread); taken before mu_
  std::thread thread_;
};

}  // namespace stria::oss
