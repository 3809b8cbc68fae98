#pragma once
// summary_writer: TensorBoard event files from C++ — scalars, histograms, text and the graph.
//
//   symflow::tensorboard::summary_writer log("runs/mlp");
//   log.add_graph(to_graph(loss));
//   log.add_scalar("loss", loss_value, step);
//   log.add_histogram("dense1/W", W_tensor, step);
//
// The file is `<logdir>/events.out.tfevents.<seconds>.<hostname>`, a sequence of TFRecords each
// holding one Event; the first says file_version "brain.Event:2". Records are buffered and reach
// the disk on flush(), every flush_interval from a background thread, and on close / destruction,
// so a TensorBoard watching the directory sees a live run within seconds.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>

#include "../../core/error.hpp"
#include "../../core/excerpt.hpp"
#include "../../core/utf8.hpp"
#include "../../core/tensor.hpp"
#include "../../graph/graph.hpp"
#include "graph_def.hpp"
#include "histogram.hpp"
#include "protobuf.hpp"
#include "record.hpp"

namespace symflow::tensorboard {

// The log directory or event file cannot be created or written; the message names the path.
class tensorboard_error : public error {
 public:
  using error::error;
};

struct summary_writer_options {
  // How long a record may wait in memory before the background thread writes it out (positive).
  std::chrono::milliseconds flush_interval{2000};
};

class summary_writer {
 public:
  explicit summary_writer(const std::filesystem::path& logdir, summary_writer_options options = {})
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
      write_event([](proto_writer& event) { event.bytes_field(3, "brain.Event:2"); }, 0);
    } catch (...) {
      std::fclose(file_);  // the destructor does not run for a throwing constructor
      throw;
    }
    flusher_ = std::thread([this] { flush_periodically(); });
  }

  summary_writer(const summary_writer&) = delete;
  summary_writer& operator=(const summary_writer&) = delete;

  // Destructors must not throw: a failure here is lost; call close() to see it.
  ~summary_writer() {
    try {
      close();
    } catch (...) {
    }
  }

  const std::filesystem::path& path() const noexcept { return path_; }

  // Summary.Value.simple_value is a float: TensorBoard's scalar dashboard stores single precision.
  void add_scalar(std::string_view tag, double value, std::int64_t step) {
    check_tag("add_scalar", tag);
    proto_writer summary_value;
    summary_value.bytes_field(1, tag);
    summary_value.float_field(2, static_cast<float>(value));
    write_summary(summary_value, step);
  }

  void add_histogram(std::string_view tag, std::span<const float> values, std::int64_t step, histogram_buckets buckets = {}) {
    add_histogram_of(tag, values, step, buckets);
  }
  void add_histogram(std::string_view tag, std::span<const double> values, std::int64_t step, histogram_buckets buckets = {}) {
    add_histogram_of(tag, values, step, buckets);
  }
  template <class T, class S>
  void add_histogram(std::string_view tag, const tensor<T, S>& values, std::int64_t step, histogram_buckets buckets = {}) {
    add_histogram_of(tag, std::span<const T>(values.data(), values.size()), step, buckets);
  }
  // Views too, since parameters are read from a params store as views; a strided view is copied.
  template <class T, class S>
  void add_histogram(std::string_view tag, const tensor_view<T, S>& values, std::int64_t step, histogram_buckets buckets = {}) {
    using element = std::remove_const_t<T>;
    if (values.is_contiguous()) {
      add_histogram_of(tag, std::span<const element>(values.data(), values.size()), step, buckets);
      return;
    }
    const auto copy = tensor<element, S>::copy_of(values);
    add_histogram_of(tag, std::span<const element>(copy.data(), copy.size()), step, buckets);
  }

  // A text summary is what TensorBoard's text plugin reads: a scalar DT_STRING tensor whose
  // metadata names the "text" plugin. TensorBoard renders it as Markdown.
  void add_text(std::string_view tag, std::string_view text, std::int64_t step) {
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

  // The graph dashboard shows the last graph of a run (see graph_def.hpp for the conversion).
  void add_graph(const graph& g, std::int64_t step = 0) {
    const std::string graph_def = to_graph_def(g);
    write_event([&](proto_writer& event) { event.bytes_field(4, graph_def); }, step);
  }

  void flush() {
    std::lock_guard lock(mutex_);
    throw_if_failed_or_closed("flush");
    flush_locked();
    throw_if_failed_or_closed("flush");
  }

  // Writes out what is buffered and closes the file; later calls other than close() throw.
  void close() {
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

 private:
  template <class T>
  void add_histogram_of(std::string_view tag, std::span<const T> values, std::int64_t step, histogram_buckets buckets) {
    check_tag("add_histogram", tag);
    const histogram h = make_histogram(values, buckets, "summary_writer::add_histogram '" + std::string(tag) + "'");
    proto_writer summary_value;
    summary_value.bytes_field(1, tag);
    summary_value.bytes_field(5, h.to_proto());
    write_summary(summary_value, step);
  }

  // Summary.Value.tag is a protobuf string, which readers (TensorBoard's included) decode as UTF-8:
  // other bytes would make the whole event file unreadable there, so they are refused here.
  static void check_tag(std::string_view op, std::string_view tag) {
    if (!symflow::detail::valid_utf8(tag))
      throw value_error("summary_writer::" + std::string(op) + ": tag '" + symflow::detail::excerpt(tag) +
                        "' is not valid UTF-8 (TensorBoard tags are protobuf strings)");
  }

  void write_summary(const proto_writer& summary_value, std::int64_t step) {
    proto_writer summary;
    summary.message_field(1, summary_value);
    write_event([&](proto_writer& event) { event.message_field(5, summary); }, step);
  }

  template <class AddPayload>
  void write_event(AddPayload&& add_payload, std::int64_t step) {
    proto_writer event;
    const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
    event.double_field(1, std::chrono::duration<double>(since_epoch).count());
    event.int64_field(2, step);
    add_payload(event);
    const std::string record = tfrecord(event.bytes());
    std::lock_guard lock(mutex_);
    throw_if_failed_or_closed("write");
    if (std::fwrite(record.data(), 1, record.size(), file_) != record.size()) failure_ = "cannot write '" + path_.string() + "'";
    throw_if_failed_or_closed("write");
  }

  // TensorFlow's name: events.out.tfevents.<10-digit seconds>.<hostname>. Two writers started in the
  // same second share that name, so the second gets ".1", ".2", ...; TensorBoard reads every file
  // whose name contains "tfevents". "x" opens exclusively, so two processes never share a file.
  void open_new_event_file(const std::filesystem::path& logdir) {
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

  void flush_locked() {
    if (file_ && failure_.empty() && std::fflush(file_) != 0) failure_ = "cannot write '" + path_.string() + "'";
  }

  // A failure in the background thread has no caller to throw to, so it is kept for the next call.
  void throw_if_failed_or_closed(const char* action) {
    if (!failure_.empty()) throw tensorboard_error("summary_writer: " + failure_);
    if (!file_) throw tensorboard_error(std::string("summary_writer: ") + action + " after close ('" + path_.string() + "')");
  }

  void flush_periodically() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      if (wake_flusher_.wait_for(lock, options_.flush_interval, [this] { return stopping_; })) break;
      flush_locked();
    }
  }

  summary_writer_options options_;
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  std::string failure_;
  std::mutex mutex_;
  std::condition_variable wake_flusher_;
  bool stopping_ = false;
  std::thread flusher_;
};

}  // namespace symflow::tensorboard
