// Cluster keys and the CONNECT challenge-response (docs/security.md).
//
// A cluster key is 32 random bytes kept in a file as 64 hex digits (mode 0600, written by
// `lctl keygen`). A KeyRing holds the keys a process was given: the first (primary) is the
// one it proves and signs with; the others are only accepted from peers, which is how a key
// is rotated without downtime (docs/security.md, "Rotating the key").
//
// The handshake (docs/wire-protocol.md): the client sends a 32-byte nonce Nc in CONNECT;
// the server answers with its nonce Ns; the client sends OP_AUTH with
// HMAC-SHA256(K, Transcript("client", ...)); the server checks it against every key of its
// ring (constant time), and answers with HMAC-SHA256(K', Transcript("server", ...)) made
// with the key that matched, which the client checks against its ring. Nothing but CONNECT
// and OP_AUTH is served to a connection before that.
//
// Thread-safety: a KeyRing is immutable once loaded; share it freely (shared_ptr<const>).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace stria::lnet {

constexpr size_t kKeySize = 32;    // bytes of a cluster key (256 bits)
constexpr size_t kNonceSize = 32;  // bytes of a CONNECT nonce
constexpr size_t kMacSize = 32;    // HMAC-SHA256
// Where tools look for the key when neither --key-file nor $STRIA_KEY_FILE names one.
constexpr const char* kDefaultKeyFile = "/etc/stria/stria.key";

using Key = std::array<uint8_t, kKeySize>;
using Mac = std::array<uint8_t, kMacSize>;

class KeyRing {
 public:
  explicit KeyRing(std::vector<Key> keys) : keys_(std::move(keys)) {}
  const Key& primary() const { return keys_.front(); }
  const std::vector<Key>& keys() const { return keys_; }

  // The index of the key under which `mac` is HMAC(key, message), or nullopt. Every key is
  // tried and compared in constant time.
  std::optional<size_t> Match(std::string_view message, std::span<const uint8_t> mac) const;

 private:
  std::vector<Key> keys_;  // never empty
};

// Reads key files (the first is the primary). Each must hold exactly 64 hex digits (and
// optional surrounding whitespace) and must not be readable by group or others.
Result<std::shared_ptr<const KeyRing>> LoadKeyRing(const std::vector<std::string>& paths);

// Writes a fresh random key to `path` (mode 0600). kExist if it exists and !force.
Status WriteNewKeyFile(const std::string& path, bool force);

// For tools and libraries that connect on their own: the key file named by $STRIA_KEY_FILE,
// else /etc/stria/stria.key if it exists, else none (nullptr).
Result<std::shared_ptr<const KeyRing>> DefaultKeyRing();

Mac Hmac(const Key& key, std::string_view message);
bool ConstantTimeEqual(std::span<const uint8_t> a, std::span<const uint8_t> b);
// kNonceSize bytes from RAND_bytes.
std::string RandomNonce();

// The bytes both sides MAC: a version tag, the label ("client" or "server"), then each
// field as a 4-byte little-endian length and its bytes.
struct HandshakeIds {
  std::string client_nonce, server_nonce;
  std::string client_role, client_uuid;
  std::string server_role, server_uuid;
  std::string fsname;
};
std::string Transcript(std::string_view label, const HandshakeIds& ids);

// Appends one length-prefixed field (4-byte little-endian length, then the bytes).
void AppendField(std::string* out, std::string_view field);

// The error both sides report: kAccess, "authentication failed: <why>".
Status AuthFailed(std::string_view why);

}  // namespace stria::lnet
