#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <string>

namespace stria {

void InitLogging(std::string_view process_name, std::string_view level) {
  auto logger = spdlog::stderr_color_mt(std::string(process_name));
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %n[%P] %^%l%$ %v");
  spdlog::set_default_logger(logger);
  std::string lvl(level.empty() ? "info" : level);
  if (const char* env = std::getenv("STRIA_LOG")) lvl = env;
  spdlog::set_level(spdlog::level::from_str(lvl));
  spdlog::flush_on(spdlog::level::info);
}

}  // namespace stria
