#pragma once
// A one-line progress bar per epoch:
//   epoch 3/10 [==========>         ] 234/469 loss 0.4123 acc 0.8512 12345 ex/s
// On a terminal the line is redrawn in place (at most ten times a second, so drawing costs nothing
// next to training); elsewhere (a log file, CI) only the finished line is written, since carriage
// returns would fill a log with hundreds of partial lines.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>

namespace symflow {

struct epoch_summary {
  std::size_t batches = 0, examples = 0;
  double mean_loss = 0, accuracy = 0;
  double seconds = 0;
  double examples_per_second() const { return seconds > 0 ? double(examples) / seconds : 0.0; }
};

class epoch_progress {
 public:
  // label names the epoch ("epoch 3/10"); interactive defaults to whether out is std::cerr or
  // std::cout attached to a terminal.
  epoch_progress(std::string label, std::size_t total_batches, std::ostream& out = std::cerr,
                 std::optional<bool> interactive = std::nullopt)
      : label_(std::move(label)),
        total_(total_batches),
        out_(&out),
        interactive_(interactive ? *interactive : is_terminal(out)),
        start_(clock::now()),
        last_draw_(start_) {}

  // After each batch: totals so far this epoch.
  void update(std::size_t batches_done, std::size_t examples_done, double mean_loss, double accuracy) {
    summary_ = {batches_done, examples_done, mean_loss, accuracy, elapsed()};
    if (!interactive_) return;
    const auto now = clock::now();
    if (batches_done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    *out_ << '\r' << line(summary_) << "\x1b[K" << std::flush;
  }

  // Ends the epoch's line and returns its totals.
  epoch_summary finish() {
    summary_.seconds = elapsed();
    if (interactive_) *out_ << '\r' << line(summary_) << " " << seconds_text(summary_.seconds) << "\x1b[K\n";
    else *out_ << line(summary_) << " " << seconds_text(summary_.seconds) << "\n";
    out_->flush();
    return summary_;
  }

  std::string line(const epoch_summary& s) const {
    constexpr std::size_t width = 20;
    const std::size_t filled = total_ ? std::min(width, s.batches * width / total_) : width;
    std::string bar(filled, '=');
    if (filled < width) bar += '>' + std::string(width - filled - 1, ' ');
    char numbers[160];
    std::snprintf(numbers, sizeof numbers, "%zu/%zu loss %.4f acc %.4f %.0f ex/s", s.batches, total_, s.mean_loss,
                  s.accuracy, s.examples_per_second());
    return label_ + " [" + bar + "] " + numbers;
  }

 private:
  using clock = std::chrono::steady_clock;
  static bool is_terminal(const std::ostream& out) {
    if (&out == &std::cerr || &out == &std::clog) return ::isatty(STDERR_FILENO);
    if (&out == &std::cout) return ::isatty(STDOUT_FILENO);
    return false;
  }
  static std::string seconds_text(double s) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", s);
    return text;
  }
  double elapsed() const { return std::chrono::duration<double>(clock::now() - start_).count(); }

  std::string label_;
  std::size_t total_;
  std::ostream* out_;
  bool interactive_;
  clock::time_point start_, last_draw_;
  epoch_summary summary_;
};

}  // namespace symflow
