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
//
// The member functions are defined in summary_writer_impl.hpp, compiled once per program under
// SYMFLOW_SEPARATE_COMPILATION (core/separate_compilation.hpp).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>

#include "../../core/error.hpp"
#include "../../core/separate_compilation.hpp"
#include "../../core/tensor.hpp"
#include "../../ir/graph.hpp"
#include "histogram.hpp"
#include "protobuf.hpp"

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
  explicit summary_writer(const std::filesystem::path& logdir, summary_writer_options options = {});
  summary_writer(const summary_writer&) = delete;
  summary_writer& operator=(const summary_writer&) = delete;
  // Destructors must not throw: a failure here is lost; call close() to see it.
  ~summary_writer();

  const std::filesystem::path& path() const noexcept { return path_; }

  // Summary.Value.simple_value is a float: TensorBoard's scalar dashboard stores single precision.
  void add_scalar(std::string_view tag, double value, std::int64_t step);

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
  void add_text(std::string_view tag, std::string_view text, std::int64_t step);

  // The graph dashboard shows the last graph of a run (see graph_def.hpp for the conversion).
  void add_graph(const graph& g, std::int64_t step = 0);

  void flush();

  // Writes out what is buffered and closes the file; later calls other than close() throw.
  void close();

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

  static void check_tag(std::string_view op, std::string_view tag);
  void write_summary(const proto_writer& summary_value, std::int64_t step);
  // An Event with its wall time and step, and `payload` as its length-delimited field `field`
  // (3 file_version, 4 graph_def, 5 summary).
  void write_event(std::uint32_t field, std::string_view payload, std::int64_t step);
  void open_new_event_file(const std::filesystem::path& logdir);
  void flush_locked();
  void throw_if_failed_or_closed(const char* action);
  void flush_periodically();

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

#if !SYMFLOW_LIBRARY_DECLARED_ONLY
#include "summary_writer_impl.hpp"
#endif
