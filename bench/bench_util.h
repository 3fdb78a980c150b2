// Helpers shared by the bench/ tools: a monotonic timer, an errno-reporting failure, and a
// phase runner that spreads a list of names over T threads (name i to thread i % T).
//
// Thread-safety: RunPhase's op is called concurrently from `threads` threads.
#pragma once

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace stria::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Prints "TOOL: WHAT PATH: strerror(errno)" and returns 1 (an exit status).
inline int Fail(const char* tool, const char* what, const std::string& path) {
  fprintf(stderr, "%s: %s %s: %s\n", tool, what, path.c_str(), strerror(errno));
  return 1;
}

// Runs op(name) for every name on `threads` threads; false when any failed (op printed why).
inline bool RunPhase(const std::vector<std::string>& names, int threads,
                     const std::function<int(const std::string&)>& op) {
  std::atomic<bool> ok{true};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t i = static_cast<size_t>(t); i < names.size() && ok.load();
           i += static_cast<size_t>(threads)) {
        if (op(names[i]) != 0) ok = false;
      }
    });
  }
  for (auto& th : pool) th.join();
  return ok.load();
}

}  // namespace stria::bench
