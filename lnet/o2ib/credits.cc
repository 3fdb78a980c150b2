#include "lnet/o2ib/credits.h"

#include <algorithm>
#include <string>

namespace stria::lnet::o2ib {

namespace {

CreditParams Normalize(CreditParams p) {
  p.queue_depth = std::max<uint16_t>(p.queue_depth, 1);
  p.noop_threshold = std::clamp<uint16_t>(p.noop_threshold, 1, p.queue_depth);
  return p;
}

}  // namespace

Credits::Credits(CreditParams params) : params_(Normalize(params)) {
  send_normal_ = params_.queue_depth;
  send_noop_ = params_.reserved;
  peer_normal_ = params_.queue_depth;
  peer_noop_ = params_.reserved;
}

bool Credits::CanSend(MsgKind kind) const {
  return kind == MsgKind::kNormal ? send_normal_ > 0 : send_noop_ > 0;
}

bool Credits::NeedNoop(bool normal_queued) const {
  if (owed_normal_ < params_.noop_threshold || send_noop_ == 0) return false;
  // A queued message that can go out carries the credits itself.
  return !(normal_queued && send_normal_ > 0);
}

CreditReturn Credits::Consume(MsgKind kind) {
  if (kind == MsgKind::kNormal) {
    --send_normal_;
  } else {
    --send_noop_;
  }
  CreditReturn r{owed_normal_, owed_noop_};
  peer_normal_ += owed_normal_;
  peer_noop_ += owed_noop_;
  owed_normal_ = 0;
  owed_noop_ = 0;
  return r;
}

Status Credits::OnReceive(MsgKind kind, CreditReturn returned) {
  if (kind == MsgKind::kNormal) {
    if (peer_normal_ == 0) {
      return Status(Code::kProtocol, "o2ib peer sent a message with no credit left (queue depth " +
                                         std::to_string(params_.queue_depth) + ")");
    }
    --peer_normal_;
    ++unposted_normal_;
  } else {
    if (peer_noop_ == 0) {
      return Status(Code::kProtocol, "o2ib peer sent a credit message with no reserved slot left");
    }
    if (returned.normal == 0) {
      return Status(Code::kProtocol, "o2ib peer sent a credit message that returns nothing");
    }
    --peer_noop_;
    ++unposted_noop_;
  }
  if (send_normal_ + returned.normal > params_.queue_depth ||
      send_noop_ + returned.noop > params_.reserved) {
    return Status(Code::kProtocol, "o2ib peer returned more credits than it was given (" +
                                       std::to_string(returned.normal) + " normal, " +
                                       std::to_string(returned.noop) + " reserved)");
  }
  send_normal_ += returned.normal;
  send_noop_ += returned.noop;
  return Status::Ok();
}

void Credits::OnRepost(MsgKind kind) {
  if (kind == MsgKind::kNormal) {
    if (unposted_normal_ == 0) return;
    --unposted_normal_;
    ++owed_normal_;
  } else {
    if (unposted_noop_ == 0) return;
    --unposted_noop_;
    ++owed_noop_;
  }
}

}  // namespace stria::lnet::o2ib
