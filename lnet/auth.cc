#include "lnet/auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace stria::lnet {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<Key> ReadKeyFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("key file " + path, errno);
  struct stat st{};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    return ErrnoStatus("key file " + path, e);
  }
  if (!S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
    close(fd);
    return Status(Code::kAccess, "key file " + path +
                                     " must be a regular file readable by its owner only "
                                     "(chmod 600)");
  }
  char buf[256];
  const ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  if (n < 0) return ErrnoStatus("key file " + path, errno);
  std::string_view text(buf, static_cast<size_t>(n));
  while (!text.empty() && isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  Key key{};
  if (text.size() != 2 * kKeySize) {
    return Status(Code::kInval, "key file " + path + " must hold " +
                                      std::to_string(2 * kKeySize) +
                                      " hex digits (lctl keygen writes one)");
  }
  for (size_t i = 0; i < kKeySize; ++i) {
    const int hi = HexDigit(text[2 * i]), lo = HexDigit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return Status(Code::kInval, "key file " + path + " holds a character that is not hex");
    }
    key[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return key;
}

}  // namespace

std::optional<size_t> KeyRing::Match(std::string_view message,
                                     std::span<const uint8_t> mac) const {
  std::optional<size_t> found;
  for (size_t i = 0; i < keys_.size(); ++i) {
    const Mac want = Hmac(keys_[i], message);
    if (ConstantTimeEqual(want, mac) && !found) found = i;
  }
  return found;
}

Result<std::shared_ptr<const KeyRing>> LoadKeyRing(const std::vector<std::string>& paths) {
  if (paths.empty()) return Status(Code::kInval, "no key file given");
  std::vector<Key> keys;
  for (const std::string& p : paths) {
    STRIA_ASSIGN_OR_RETURN(Key k, ReadKeyFile(p));
    keys.push_back(k);
  }
  return std::shared_ptr<const KeyRing>(std::make_shared<KeyRing>(std::move(keys)));
}

Result<std::shared_ptr<const KeyRing>> DefaultKeyRing() {
  const char* env = getenv("STRIA_KEY_FILE");
  if (env && *env) return LoadKeyRing({env});
  if (access(kDefaultKeyFile, F_OK) == 0) return LoadKeyRing({kDefaultKeyFile});
  return std::shared_ptr<const KeyRing>();
}

Status WriteNewKeyFile(const std::string& path, bool force) {
  Key key{};
  if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) {
    return Status(Code::kIO, "RAND_bytes failed: no key written");
  }
  static const char kHex[] = "0123456789abcdef";
  std::string text;
  for (uint8_t b : key) {
    text += kHex[b >> 4];
    text += kHex[b & 15];
  }
  text += '\n';
  // Written beside the target and renamed over it, so a reader never sees half a key.
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(tmp, errno);
  const bool wrote = fchmod(fd, 0600) == 0 &&
                     write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                     fsync(fd) == 0;
  const int e = errno;
  close(fd);
  if (!wrote) {
    unlink(tmp.c_str());
    return ErrnoStatus(tmp, e);
  }
  if (force) {
    if (rename(tmp.c_str(), path.c_str()) != 0) {
      const int re = errno;
      unlink(tmp.c_str());
      return ErrnoStatus(path, re);
    }
  } else {
    // link(2) fails with EEXIST rather than replacing an existing key.
    if (link(tmp.c_str(), path.c_str()) != 0) {
      const int le = errno;
      unlink(tmp.c_str());
      if (le == EEXIST) {
        return Status(Code::kExist, path + " exists; use --force to replace the key");
      }
      return ErrnoStatus(path, le);
    }
    unlink(tmp.c_str());
  }
  return Status::Ok();
}

Mac Hmac(const Key& key, std::string_view message) {
  Mac out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), out.data(), &len);
  return out;
}

bool ConstantTimeEqual(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string RandomNonce() {
  std::string n(kNonceSize, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(n.data()), static_cast<int>(n.size())) != 1) {
    abort();  // no randomness: nothing safe to do
  }
  return n;
}

void AppendField(std::string* out, std::string_view field) {
  const uint32_t n = static_cast<uint32_t>(field.size());
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(n >> (8 * i)));
  out->append(field);
}

std::string Transcript(std::string_view label, const HandshakeIds& ids) {
  std::string t = "stria-auth-v1";
  t.push_back('\0');
  AppendField(&t, label);
  AppendField(&t, ids.client_nonce);
  AppendField(&t, ids.server_nonce);
  AppendField(&t, ids.client_role);
  AppendField(&t, ids.client_uuid);
  AppendField(&t, ids.server_role);
  AppendField(&t, ids.server_uuid);
  AppendField(&t, ids.fsname);
  return t;
}

Status AuthFailed(std::string_view why) {
  return Status(Code::kAccess, "authentication failed: " + std::string(why));
}

}  // namespace stria::lnet
