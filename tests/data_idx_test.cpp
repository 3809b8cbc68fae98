// IDX reading (plain and gzip), its errors, and the MNIST-format loader, against files this test
// writes byte by byte, and against the real Fashion-MNIST when Debian's package is installed.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <random>
#include <string>
#include <vector>

#include <symflow/io/idx.hpp>
#include <symflow/data/mnist.hpp>

// The largest single allocation through plain operator new, to show that a hostile header cannot
// make the reader allocate what it claims.
// (Out of line: GCC would otherwise see malloc inside operator new and free inside operator delete
// and warn of a mismatch that the replacement makes correct.)
static std::atomic<std::size_t> largest_allocation{0};
[[gnu::noinline]] static void* recorded_allocation(std::size_t n) {
  std::size_t seen = largest_allocation.load();
  while (n > seen && !largest_allocation.compare_exchange_weak(seen, n)) {
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] static void release(void* p) noexcept { std::free(p); }
void* operator new(std::size_t n) { return recorded_allocation(n); }
void* operator new[](std::size_t n) { return recorded_allocation(n); }
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }

namespace {

using namespace symflow;
namespace fs = std::filesystem;
using bytes = std::vector<unsigned char>;

class IdxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("symflow_idx_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

void write_plain(const std::string& path, const bytes& content) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
}

void write_gzip(const std::string& path, const bytes& content) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  if (!content.empty()) {
    ASSERT_EQ(gzwrite(f, content.data(), static_cast<unsigned>(content.size())), int(content.size()));
  }
  ASSERT_EQ(gzclose(f), Z_OK);
}

bytes read_plain(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void put_big_endian(bytes& out, std::uint64_t v, int width) {
  for (int i = width - 1; i >= 0; --i) out.push_back(static_cast<unsigned char>((v >> (8 * i)) & 0xFF));
}

bytes idx_header(std::uint8_t type_code, const std::vector<std::uint32_t>& dims) {
  bytes out = {0, 0, type_code, static_cast<unsigned char>(dims.size())};
  for (auto d : dims) put_big_endian(out, d, 4);
  return out;
}

// One random IDX array: its file bytes and, per element, the value's bit pattern as the reader
// should produce it (integers sign-extended, floats as their IEEE bits).
struct random_idx {
  std::uint8_t type_code;
  std::vector<std::uint32_t> dims;
  bytes file;
  std::vector<std::uint64_t> bits;
};

random_idx make_random_idx(std::uint8_t type_code, std::mt19937_64& rng) {
  random_idx r{type_code, {}, {}, {}};
  const int rank = 1 + int(rng() % 4);
  std::size_t count = 1;
  for (int a = 0; a < rank; ++a) {
    r.dims.push_back(std::uint32_t(1 + rng() % 6));
    count *= r.dims.back();
  }
  r.file = idx_header(type_code, r.dims);
  const int width = type_code == 0x08 || type_code == 0x09 ? 1 : type_code == 0x0B ? 2 : type_code == 0x0E ? 8 : 4;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t raw = rng();
    if (type_code == 0x0D) {
      const float f = std::ldexp(float(std::int32_t(raw >> 32)), -20);
      std::uint32_t b;
      std::memcpy(&b, &f, 4);
      raw = b;
    } else if (type_code == 0x0E) {
      const double d = std::ldexp(double(std::int64_t(raw)), -50);
      std::memcpy(&raw, &d, 8);
    }
    const std::uint64_t stored = width == 8 ? raw : raw & ((std::uint64_t(1) << (8 * width)) - 1);
    put_big_endian(r.file, stored, width);
    r.bits.push_back(stored);
  }
  return r;
}

template <class T>
std::uint64_t bits_of(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    std::uint64_t out = 0;
    std::memcpy(&out, &v, sizeof v);
    return out;
  } else {
    using U = std::make_unsigned_t<T>;
    return static_cast<U>(v);
  }
}

TEST_F(IdxTest, EveryElementTypePlainAndGzipReadsBackExactly) {
  std::mt19937_64 rng(20240611);
  for (std::uint8_t code : {0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E})
    for (bool gz : {false, true})
      for (int trial = 0; trial < 3; ++trial) {
        SCOPED_TRACE("type " + std::to_string(code) + (gz ? " gzip" : " plain") + " trial " + std::to_string(trial));
        const random_idx r = make_random_idx(code, rng);
        const std::string p = path(gz ? "a.idx.gz" : "a.idx");
        if (gz) write_gzip(p, r.file);
        else write_plain(p, r.file);
        const idx_array a = read_idx(p);
        EXPECT_EQ(a.type, static_cast<idx_type>(code));
        ASSERT_EQ(a.extents, std::vector<std::size_t>(r.dims.begin(), r.dims.end()));
        ASSERT_EQ(a.size(), r.bits.size());
        std::size_t i = 0;
        a.for_each_element([&](auto v) {
          EXPECT_EQ(bits_of(v), r.bits[i]) << "element " << i;
          ++i;
        });
        EXPECT_EQ(i, r.bits.size());
        EXPECT_NO_THROW(read_idx(p, static_cast<idx_type>(code), std::uint8_t(r.dims.size())));
      }
}

TEST_F(IdxTest, ToTensorConvertsEveryElement) {
  std::mt19937_64 rng(7);
  bytes file = idx_header(0x09, {2, 3, 4});
  std::vector<std::int8_t> values;
  for (int i = 0; i < 24; ++i) {
    values.push_back(static_cast<std::int8_t>(rng() & 0xFF));
    file.push_back(static_cast<unsigned char>(values.back()));
  }
  write_plain(path("s8"), file);
  const idx_array a = read_idx(path("s8"));
  const auto as_float = a.to_tensor<float, 3>();
  const auto as_int = a.to_tensor<std::int32_t, 3>();
  ASSERT_EQ(as_float.extents(), (extents_t<3>{2, 3, 4}));
  for (std::size_t i = 0; i < 24; ++i) {
    EXPECT_EQ(as_float[i], float(values[i]));
    EXPECT_EQ(as_int[i], std::int32_t(values[i]));
  }
  EXPECT_EQ(as_float(1, 2, 3), float(values[23]));
  try {
    (void)a.to_tensor<float, 2>();
    FAIL() << "expected data_error";
  } catch (const data_error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path("s8")), std::string::npos) << e.what();
  }
}

TEST_F(IdxTest, GzipWithSeveralMembersReadsAsOne) {
  bytes content = idx_header(0x08, {5});
  for (int i = 0; i < 5; ++i) content.push_back(static_cast<unsigned char>(10 * i));
  write_gzip(path("part1.gz"), bytes(content.begin(), content.begin() + 6));
  write_gzip(path("part2.gz"), bytes(content.begin() + 6, content.end()));
  bytes joined = read_plain(path("part1.gz"));
  const bytes second = read_plain(path("part2.gz"));
  joined.insert(joined.end(), second.begin(), second.end());
  write_plain(path("joined.gz"), joined);
  const idx_array a = read_idx(path("joined.gz"));
  ASSERT_EQ(a.bytes, bytes({0, 10, 20, 30, 40}));
}

TEST_F(IdxTest, EmptyArrayIsAllowed) {
  write_gzip(path("empty.gz"), idx_header(0x0D, {0, 28}));
  const idx_array a = read_idx(path("empty.gz"));
  EXPECT_EQ(a.extents, (std::vector<std::size_t>{0, 28}));
  EXPECT_EQ(a.size(), 0u);
}

// Runs f, expecting a data_error whose message contains every fragment.
template <class F>
void expect_data_error(F&& f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "expected a data_error";
  } catch (const data_error& e) {
    for (const auto& fragment : fragments)
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << "'" << fragment << "' not in: " << e.what();
  }
}

TEST_F(IdxTest, MissingFileNamesPathAndExpectedMagic) {
  const std::string p = path("nope-images-idx3-ubyte.gz");
  expect_data_error([&] { read_idx(p, idx_type::u8, 3); }, {p, "0x00000803", "No such file"});
}

TEST_F(IdxTest, WrongMagicNamesPathExpectedAndFound) {
  bytes labels = idx_header(0x08, {3});
  labels.insert(labels.end(), {1, 2, 3});
  for (bool gz : {false, true}) {
    const std::string p = path(gz ? "labels.gz" : "labels");
    if (gz) write_gzip(p, labels);
    else write_plain(p, labels);
    expect_data_error([&] { read_idx(p, idx_type::u8, 3); },
                      {p, "wrong magic", "expected 0x00000803 (unsigned byte, rank 3)", "found 0x00000801 (unsigned byte, rank 1)"});
  }
}

TEST_F(IdxTest, NotAnIdxFileAtAll) {
  const std::string text = "hello, world\n";
  write_plain(path("text"), bytes(text.begin(), text.end()));
  expect_data_error([&] { read_idx(path("text")); }, {path("text"), "wrong magic", "found 0x68656C6C"});
  write_plain(path("bad-type"), {0, 0, 0x07, 1, 0, 0, 0, 0});
  expect_data_error([&] { read_idx(path("bad-type")); }, {"found 0x00000701"});
  write_plain(path("rank0"), {0, 0, 0x08, 0});
  expect_data_error([&] { read_idx(path("rank0")); }, {"rank 0"});
}

TEST_F(IdxTest, TruncationSaysHowMuchWasExpectedAndFound) {
  bytes images = idx_header(0x08, {3, 4, 5});
  for (int i = 0; i < 60; ++i) images.push_back(static_cast<unsigned char>(i));
  for (bool gz : {false, true}) {
    const std::string suffix = gz ? ".gz" : "";
    auto write = [&](const std::string& name, const bytes& content) {
      if (gz) write_gzip(path(name + suffix), content);
      else write_plain(path(name + suffix), content);
      return path(name + suffix);
    };
    const std::string short_data = write("short", bytes(images.begin(), images.end() - 7));
    expect_data_error([&] { read_idx(short_data, idx_type::u8, 3); },
                      {short_data, "truncated", "shape [3,4,5] of unsigned byte needs 60 data bytes", "53"});
    bytes longer = images;
    longer.push_back(9);
    const std::string long_data = write("long", longer);
    expect_data_error([&] { read_idx(long_data); }, {long_data, "trailing bytes"});
    const std::string short_header = write("header", bytes(images.begin(), images.begin() + 9));
    expect_data_error([&] { read_idx(short_header); }, {short_header, "truncated header", "need 12 bytes, found 5"});
    const std::string short_magic = write("magic", bytes(images.begin(), images.begin() + 2));
    expect_data_error([&] { read_idx(short_magic); }, {short_magic, "truncated", "found 2"});
  }
}

TEST_F(IdxTest, CorruptOrTruncatedCompressionIsReported) {
  bytes images = idx_header(0x08, {50, 20, 20});
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20000; ++i) images.push_back(static_cast<unsigned char>(rng() % 7));
  write_gzip(path("good.gz"), images);
  const bytes gz = read_plain(path("good.gz"));

  write_plain(path("cut.gz"), bytes(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(gz.size() / 2)));
  expect_data_error([&] { read_idx(path("cut.gz")); }, {path("cut.gz"), "ends early", "truncated"});

  bytes flipped = gz;
  for (std::size_t i = 20; i < 40; ++i) flipped[i] ^= 0x5A;
  write_plain(path("flipped.gz"), flipped);
  expect_data_error([&] { read_idx(path("flipped.gz")); }, {path("flipped.gz"), "corrupt compressed data"});

  bytes garbage_after = gz;
  garbage_after.insert(garbage_after.end(), {'j', 'u', 'n', 'k'});
  write_plain(path("junk.gz"), garbage_after);
  expect_data_error([&] { read_idx(path("junk.gz")); }, {path("junk.gz"), "corrupt compressed data"});

  bytes bad_crc = gz;
  bad_crc[gz.size() - 6] ^= 0xFF;  // the CRC-32 in the trailer
  write_plain(path("crc.gz"), bad_crc);
  expect_data_error([&] { read_idx(path("crc.gz")); }, {path("crc.gz"), "incorrect data check"});
}

TEST_F(IdxTest, HostileExtentsAreRefusedBeforeAllocating) {
  bytes huge = idx_header(0x0E, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu});
  write_plain(path("huge"), huge);
  expect_data_error([&] { read_idx(path("huge")); }, {path("huge"), "larger than any file"});

  // 1.6 gigabytes claimed (under the 2 GiB cap), a few bytes present: plain files are checked
  // against their size, and a compressed one is read in chunks that grow only with what it holds.
  bytes claim = idx_header(0x08, {40000, 40000});
  claim.insert(claim.end(), 1000, 7);
  for (bool gz : {false, true}) {
    const std::string p = path(gz ? "claim.gz" : "claim");
    if (gz) write_gzip(p, claim);
    else write_plain(p, claim);
    largest_allocation = 0;
    expect_data_error([&] { read_idx(p); }, {p, "needs 1600000000 data bytes", "has 1000"});
    EXPECT_LT(largest_allocation.load(), std::size_t(4) << 20);
  }
}

// The decompression bomb of issue 14: a small .gz whose header claims 10 GB and whose stream
// really inflates to far more than a sane data set. Refused from the header, against the cap,
// before inflating or allocating anything large (it used to grow its buffer with the stream and
// end in std::bad_alloc once the stream was large enough).
TEST_F(IdxTest, DecompressionBombIsRefusedByTheSizeCapBeforeInflating) {
  bytes bomb = idx_header(0x08, {100000, 100000});
  bomb.resize(bomb.size() + (std::size_t(64) << 20), 0);  // 64 MiB of zeros: a 64 KB .gz
  const std::string p = path("bomb.gz");
  write_gzip(p, bomb);
  bomb = {};
  EXPECT_LT(fs::file_size(p), std::uintmax_t(1) << 20);
  largest_allocation = 0;
  expect_data_error([&] { read_idx(p); },
                    {p, "(gzip)", "needs 10000000000 data bytes", "limit max_data_bytes = 2147483648"});
  EXPECT_LT(largest_allocation.load(), std::size_t(1) << 20);
}

TEST_F(IdxTest, SizeCapIsOverridableAndAppliesToPlainAndGzip) {
  bytes two_mib = idx_header(0x08, {2048, 1024});
  two_mib.resize(two_mib.size() + 2048 * 1024, 3);
  for (bool gz : {false, true}) {
    const std::string p = path(gz ? "a.gz" : "a");
    if (gz) write_gzip(p, two_mib);
    else write_plain(p, two_mib);
    expect_data_error([&] { read_idx(p, idx_read_options{.max_data_bytes = 1 << 20}); },
                      {p, "needs 2097152 data bytes", "limit max_data_bytes = 1048576"});
    expect_data_error([&] { read_idx(p, idx_type::u8, 2, idx_read_options{.max_data_bytes = 1 << 20}); },
                      {p, "limit max_data_bytes = 1048576"});
    EXPECT_EQ(read_idx(p, idx_read_options{.max_data_bytes = 2 << 20}).bytes.size(), std::size_t(2) << 20);
  }
}

TEST_F(IdxTest, DirectoriesAndDevicesAreRefusedWithoutReading) {
  expect_data_error([&] { read_idx(dir_.string()); }, {dir_.string(), "a directory, not a regular file"});
  expect_data_error([&] { read_idx("/dev/zero"); }, {"/dev/zero", "a character device, not a regular file"});
}

// A directory in the MNIST layout with random images and labels; returns the pixels and labels.
struct synthetic_split {
  bytes pixels, labels;
};

synthetic_split write_split(const std::string& dir, const std::string& prefix, std::uint32_t n, bool gz, std::mt19937_64& rng) {
  synthetic_split s;
  bytes images = idx_header(0x08, {n, 28, 28}), labels = idx_header(0x08, {n});
  for (std::uint32_t i = 0; i < n * 28 * 28; ++i) s.pixels.push_back(static_cast<unsigned char>(rng() & 0xFF));
  for (std::uint32_t i = 0; i < n; ++i) s.labels.push_back(static_cast<unsigned char>(rng() % 10));
  images.insert(images.end(), s.pixels.begin(), s.pixels.end());
  labels.insert(labels.end(), s.labels.begin(), s.labels.end());
  const std::string suffix = gz ? ".gz" : "";
  auto write = [&](const std::string& name, const bytes& content) {
    if (gz) write_gzip(dir + "/" + name + suffix, content);
    else write_plain(dir + "/" + name + suffix, content);
  };
  write(prefix + "-images-idx3-ubyte", images);
  write(prefix + "-labels-idx1-ubyte", labels);
  return s;
}

void expect_split_matches(const image_split& split, const synthetic_split& reference, std::size_t n) {
  ASSERT_EQ(split.size(), n);
  ASSERT_EQ(split.images.extents(), (extents_t<2>{n, 784}));
  EXPECT_EQ(split.rows, 28u);
  EXPECT_EQ(split.cols, 28u);
  for (std::size_t i = 0; i < n * 784; ++i) {
    const float want = float(reference.pixels[i]) / 255.0f;
    if (split.images[i] != want) {
      ADD_FAILURE() << "pixel " << i << ": " << split.images[i] << " != " << want;
      return;
    }
  }
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(split.labels[i], std::int32_t(reference.labels[i])) << "label " << i;
  const auto nhwc = split.images_nhwc();
  EXPECT_EQ(nhwc.extents(), (extents_t<4>{n, 28, 28, 1}));
  EXPECT_EQ(nhwc(n - 1, 27, 3, 0), float(reference.pixels[(n - 1) * 784 + 27 * 28 + 3]) / 255.0f);
}

TEST_F(IdxTest, MnistLayoutLoadsPlainOrGzipWithLimits) {
  std::mt19937_64 rng(11);
  for (bool gz : {false, true}) {
    const std::string dir = path(gz ? "gz" : "plain");
    fs::create_directories(dir);
    const auto train = write_split(dir, "train", 37, gz, rng);
    const auto test = write_split(dir, "t10k", 11, gz, rng);
    const image_dataset all = mnist(dir);
    expect_split_matches(all.train, train, 37);
    expect_split_matches(all.test, test, 11);
    const image_dataset few = load_mnist_format(dir, {.train_limit = 5, .test_limit = 100});
    expect_split_matches(few.train, train, 5);
    expect_split_matches(few.test, test, 11);
    expect_split_matches(all.train.first(9), train, 9);
  }
}

TEST_F(IdxTest, MissingDatasetFilesAndMismatchedCountsAreNamed) {
  const std::string dir = path("set");
  fs::create_directories(dir);
  expect_data_error([&] { fashion_mnist(dir); },
                    {dir + "/train-images-idx3-ubyte", dir + "/train-images-idx3-ubyte.gz", "0x00000803"});
  bytes images = idx_header(0x08, {3, 2, 2}), labels = idx_header(0x08, {2});
  images.insert(images.end(), 12, 1);
  labels.insert(labels.end(), 2, 1);
  write_plain(dir + "/train-images-idx3-ubyte", images);
  write_gzip(dir + "/train-labels-idx1-ubyte.gz", labels);
  expect_data_error([&] { fashion_mnist(dir); },
                    {dir + "/train-images-idx3-ubyte' holds 3 images", dir + "/train-labels-idx1-ubyte.gz' holds 2 labels"});
}

// The reference values below were computed from the package's files with python3, gzip and numpy.
TEST(FashionMnist, MatchesIndependentlyComputedFacts) {
  const std::string dir(fashion_mnist_directory);
  if (!fs::exists(dir + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)";
  const image_dataset data = fashion_mnist();
  ASSERT_EQ(data.train.size(), 60000u);
  ASSERT_EQ(data.test.size(), 10000u);
  ASSERT_EQ(data.train.images.extents(), (extents_t<2>{60000, 784}));
  const std::int32_t first_train_labels[] = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
  const std::int32_t first_test_labels[] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(data.train.labels[i], first_train_labels[i]);
    EXPECT_EQ(data.test.labels[i], first_test_labels[i]);
  }
  auto pixel_sum = [](const image_split& s, std::size_t image) {
    long long sum = 0;
    for (std::size_t i = 0; i < 784; ++i) sum += std::lround(s.images(image, i) * 255.0f);
    return sum;
  };
  EXPECT_EQ(pixel_sum(data.train, 0), 76247);
  EXPECT_EQ(pixel_sum(data.train, 59999), 16684);
  EXPECT_EQ(pixel_sum(data.test, 9999), 24390);
  EXPECT_EQ(data.train.images_nhwc()(0, 14, 14, 0), 217.0f / 255.0f);
  EXPECT_EQ(data.test.images_nhwc()(0, 14, 14, 0), 110.0f / 255.0f);
  long long label_sum = 0;
  for (std::int32_t l : data.train.labels) label_sum += l;
  EXPECT_EQ(label_sum, 270000);  // 6000 of each class
  const auto small = fashion_mnist(dir, {.train_limit = 100, .test_limit = 50});
  EXPECT_EQ(small.train.size(), 100u);
  EXPECT_EQ(small.test.size(), 50u);
  EXPECT_EQ(pixel_sum(small.train, 0), 76247);
}

}  // namespace
