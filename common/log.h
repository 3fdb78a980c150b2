// Logging: thin names over spdlog so every daemon logs the same way.
//
// LOG_INFO("ost {} registered at {}", idx, nid); levels: trace, debug, info, warn, error.
// InitLogging() once at process start picks the level (STRIA_LOG env or --log-level) and
// the daemon's name shown on every line. Thread-safety: spdlog's default logger is safe.
#pragma once

#ifndef SPDLOG_ACTIVE_LEVEL
#define SPDLOG_ACTIVE_LEVEL SPDLOG_LEVEL_DEBUG
#endif
#include <spdlog/spdlog.h>

#include <string_view>

namespace stria {

// Sets the process name shown in each line and the level ("info" when empty; the STRIA_LOG
// environment variable wins when set).
void InitLogging(std::string_view process_name, std::string_view level = {});

}  // namespace stria

#define LOG_TRACE(...) SPDLOG_TRACE(__VA_ARGS__)
#define LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define LOG_INFO(...) SPDLOG_INFO(__VA_ARGS__)
#define LOG_WARN(...) SPDLOG_WARN(__VA_ARGS__)
#define LOG_ERROR(...) SPDLOG_ERROR(__VA_ARGS__)
