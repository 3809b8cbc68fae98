#pragma once
// The definitions behind summary_writer.hpp. Included by it, or compiled once in the library unit
// under SYMFLOW_SEPARATE_COMPILATION (core/separate_compilation.hpp).
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>

#include "../../core/excerpt.hpp"
#include "../../core/utf8.hpp"
#include "graph_def.hpp"
#include "record.hpp"
#include "summary_writer.hpp"

namespace symflow::tensorboard {

SYMFLOW_LIBRARY_LINKAGE summary_writer::summary_writer(const std::filesystem::path& logdir, summary_writer_options options)
    : options_(options) {
  // A zero interval would make the background thread spin instead of wait.
  if (options_.flush_interval <= std::chrono::milliseconds::zero())
    throw value_error("summary_writer: flush_interval must be positive, got " + std::to_string(options_.flush_interval.count()) + " ms");
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec || !std::filesystem::is_directory(logdir))
    throw tensorboard_error("summary_writer: cannot create log directory '" + logdir.string() + "'" +
                            (ec ? ": " + ec.message() : std::string()));
  open_new_event_file(logdir);
  try {
    write_event(3, "brain.Event:2", 0);
  } catch (...) {
    std::fclose(file_);  // the destructor does not run for a throwing constructor
    throw;
  }
  flusher_ = std::thread([this] { flush_periodically(); });
}

SYMFLOW_LIBRARY_LINKAGE summary_writer::~summary_writer() {
  try {
    close();
  } catch (...) {
  }
}

SYMFLOW_LIBRARY_LINKAGE void summary_writer::add_scalar(std::string_view tag, double value, std::int64_t step) {
  check_tag("add_scalar", tag);
  proto_writer summary_value;
  summary_value.bytes_field(1, tag);
  summary_value.float_field(2, static_cast<float>(value));
  write_summary(summary_value, step);
}

SYMFLOW_LIBRARY_LINKAGE void summary_writer::add_text(std::string_view tag, std::string_view text, std::int64_t step) {
  check_tag("add_text", tag);
  proto_writer plugin_data;
  plugin_data.bytes_field(1, "text");
  proto_writer metadata;
  metadata.message_field(1, plugin_data);
  proto_writer tensor_proto;
  tensor_proto.enum_field(1, static_cast<std::int32_t>(tf_data_type::dt_string));
  tensor_proto.bytes_field(2, tensor_shape_proto({}));
  tensor_proto.bytes_field(8, text);
  proto_writer summary_value;
  summary_value.bytes_field(1, tag);
  summary_value.message_field(9, metadata);
  summary_value.message_field(8, tensor_proto);
  write_summary(summary_value, step);
}

SYMFLOW_LIBRARY_LINKAGE void summary_writer::add_graph(const graph& g, std::int64_t step) {
  write_event(4, to_graph_def(g), step);
}

SYMFLOW_LIBRARY_LINKAGE void summary_writer::flush() {
  std::lock_guard lock(mutex_);
  throw_if_failed_or_closed("flush");
  flush_locked();
  throw_if_failed_or_closed("flush");
}

SYMFLOW_LIBRARY_LINKAGE void summary_writer::close() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_flusher_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  std::lock_guard lock(mutex_);
  if (!file_) return;
  flush_locked();
  if (std::fclose(file_) != 0 && failure_.empty()) failure_ = "cannot close '" + path_.string() + "'";
  file_ = nullptr;
  if (!failure_.empty()) throw tensorboard_error("summary_writer: " + failure_);
}

// Summary.Value.tag is a protobuf string, which readers (TensorBoard's included) decode as UTF-8:
// other bytes would make the whole event file unreadable there, so they are refused here.
SYMFLOW_LIBRARY_LINKAGE void summary_writer::check_tag(std::string_view op, std::string_view tag) {
  if (!symflow::detail::valid_utf8(tag))
    throw value_error("summary_writer::" + std::string(op) + ": tag '" + symflow::detail::excerpt(tag) +
                      "' is not valid UTF-8 (TensorBoard tags are protobuf strings)");
}

SYMFLOW_LIBRARY_LINKAGE void summary_writer::write_summary(const proto_writer& summary_value, std::int64_t step) {
  proto_writer summary;
  summary.message_field(1, summary_value);
  write_event(5, summary.bytes(), step);
}

SYMFLOW_LIBRARY_LINKAGE void summary_writer::write_event(std::uint32_t field, std::string_view payload, std::int64_t step) {
  proto_writer event;
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  event.double_field(1, std::chrono::duration<double>(since_epoch).count());
  event.int64_field(2, step);
  event.bytes_field(field, payload);
  const std::string record = tfrecord(event.bytes());
  std::lock_guard lock(mutex_);
  throw_if_failed_or_closed("write");
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size()) failure_ = "cannot write '" + path_.string() + "'";
  throw_if_failed_or_closed("write");
}

// TensorFlow's name: events.out.tfevents.<10-digit seconds>.<hostname>. Two writers started in the
// same second share that name, so the second gets ".1", ".2", ...; TensorBoard reads every file
// whose name contains "tfevents". "x" opens exclusively, so two processes never share a file.
SYMFLOW_LIBRARY_LINKAGE void summary_writer::open_new_event_file(const std::filesystem::path& logdir) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof host, "localhost");
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  char stem[64];
  std::snprintf(stem, sizeof stem, "events.out.tfevents.%010lld.", static_cast<long long>(seconds));
  const std::string base = std::string(stem) + host;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    path_ = logdir / (attempt == 0 ? base : base + "." + std::to_string(attempt));
    file_ = std::fopen(path_.c_str(), "wbx");
    if (file_) return;
    if (errno != EEXIST) break;
  }
  throw tensorboard_error("summary_writer: cannot create event file '" + path_.string() + "': " + std::strerror(errno));
}

SYMFLOW_LIBRARY_LINKAGE void summary_writer::flush_locked() {
  if (file_ && failure_.empty() && std::fflush(file_) != 0) failure_ = "cannot write '" + path_.string() + "'";
}

// A failure in the background thread has no caller to throw to, so it is kept for the next call.
SYMFLOW_LIBRARY_LINKAGE void summary_writer::throw_if_failed_or_closed(const char* action) {
  if (!failure_.empty()) throw tensorboard_error("summary_writer: " + failure_);
  if (!file_) throw tensorboard_error(std::string("summary_writer: ") + action + " after close ('" + path_.string() + "')");
}

SYMFLOW_LIBRARY_LINKAGE void summary_writer::flush_periodically() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (wake_flusher_.wait_for(lock, options_.flush_interval, [this] { return stopping_; })) break;
    flush_locked();
  }
}

}  // namespace symflow::tensorboard
