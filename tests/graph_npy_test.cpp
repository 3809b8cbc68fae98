// .npy read/write: the exact bytes NumPy's format 1.0 specifies, round trips of every supported dtype
// with random values, a fixture file, and refusal of malformed files with an npy_error.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <symflow/io/npy.hpp>

using namespace symflow;

namespace {

std::vector<unsigned char> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

// A v1.0 file with the given header dict (padded as NumPy pads it) and data bytes.
std::vector<unsigned char> npy_file(const std::string& dict, const std::vector<unsigned char>& data) {
  std::string header = dict;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string file = "\x93NUMPY";
  file += '\x01';
  file += '\x00';
  file += static_cast<char>(header.size() & 0xFF);
  file += static_cast<char>(header.size() >> 8);
  file += header;
  file.append(data.begin(), data.end());
  return bytes_of(file);
}

template <class F>
void expect_npy_error(F&& f, std::initializer_list<std::string_view> fragments) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << *fragments.begin() << "'";
  } catch (const npy_error& e) {
    const std::string what = e.what();
    for (auto frag : fragments) EXPECT_NE(what.find(frag), std::string::npos) << "message: " << what << "\nwanted: " << frag;
  }
}

template <class T, class S>
tensor<T, S> random_tensor(const extents_t<S::rank>& e, unsigned seed) {
  tensor<T, S> t(e, uninitialized);
  std::mt19937_64 rng(seed);
  for (auto& v : t) {
    if constexpr (std::is_same_v<T, bool>) v = rng() & 1;
    else if constexpr (std::is_integral_v<T>) v = static_cast<T>(rng());
    else v = static_cast<T>(std::normal_distribution<double>(0, 100)(rng));
  }
  return t;
}

template <class T, class S>
void expect_round_trip(const tensor<T, S>& t) {
  const auto bytes = write_npy(t);
  EXPECT_EQ(bytes.size() % 64, (t.size() * sizeof(T)) % 64);  // header padded to a multiple of 64
  const auto back = read_npy_as<T, S>(bytes);
  ASSERT_EQ(back.extents(), t.extents());
  for (std::size_t i = 0; i < t.size(); ++i) EXPECT_EQ(back[i], t[i]) << i;
  EXPECT_EQ(write_npy(read_npy(bytes)), bytes);
}

}  // namespace

TEST(Npy, WritesTheBytesTheFormatSpecifies) {
  const auto bytes = write_npy(tensor<float, shape<2, 3>>{{1, 2, 3}, {4, 5, 6}});
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" + std::string(58, ' ') + "\n";
  ASSERT_EQ(bytes.size(), 128u + 24u);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 6), "\x93NUMPY");
  EXPECT_EQ(bytes[6], 1);
  EXPECT_EQ(bytes[7], 0);
  EXPECT_EQ(bytes[8] | (bytes[9] << 8), 118);
  EXPECT_EQ(std::string(bytes.begin() + 10, bytes.begin() + 128), header);
  float v[6];
  std::memcpy(v, bytes.data() + 128, 24);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(v[i], float(i + 1));
  // Rank 1 writes a one-element tuple, rank 0 an empty one.
  const auto one = write_npy(tensor<std::int64_t, shape<3>>{7, 8, 9});
  EXPECT_NE(std::string(one.begin(), one.end()).find("'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"),
            std::string::npos);
  const auto scalar = write_npy(tensor<bool, shape<>>(true));
  EXPECT_NE(std::string(scalar.begin(), scalar.end()).find("'descr': '|b1', 'fortran_order': False, 'shape': (), }"),
            std::string::npos);
  EXPECT_EQ(scalar.back(), 1);
}

TEST(Npy, RoundTripsEveryDtype) {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    expect_round_trip(random_tensor<float, shape<dyn, 5>>({seed + 2, 5}, seed));
    expect_round_trip(random_tensor<double, shape<2, dyn, 3>>({2, seed, 3}, seed));
    expect_round_trip(random_tensor<std::int32_t, shape<dyn>>({seed * 17}, seed));
    expect_round_trip(random_tensor<std::int64_t, shape<4, 4>>({4, 4}, seed));
    expect_round_trip(random_tensor<bool, shape<dyn, 2>>({seed, 2}, seed));
  }
  expect_round_trip(tensor<float, shape<dyn, 3>>({0, 3}));  // empty
  expect_round_trip(tensor<double, shape<>>(2.5));
  const std::string path = ::testing::TempDir() + "symflow_npy_test.npy";
  const auto t = random_tensor<double, shape<3, 2>>({3, 2}, 5);
  save_npy(path, t);
  const auto back = load_npy_as<double, shape<3, 2>>(path);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(back[i], t[i]);
}

TEST(Npy, ReadsTheFixtureAndOtherSpellings) {
  // tests/data/graph/arange_2x3_i4.npy: NumPy's layout for np.arange(6, dtype='<i4').reshape(2, 3).
  const auto fixture = read_file_bytes(std::string(SYMFLOW_TEST_DATA_DIR) + "/graph/arange_2x3_i4.npy");
  const auto t = read_npy_as<std::int32_t, shape<2, 3>>(fixture);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t[i], i);
  // Double quotes, no spaces, no trailing comma, native byte order; version 2.0.
  const std::vector<unsigned char> data = {1, 0, 0, 0, 2, 0, 0, 0};
  const auto a = read_npy(npy_file("{\"descr\":\"=i4\",\"fortran_order\":False,\"shape\":(2,)}", data));
  EXPECT_EQ(a.type, dtype::i32);
  EXPECT_EQ(a.extents, (std::vector<std::int64_t>{2}));
  auto v2 = npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", data);
  v2[6] = 2;
  v2.insert(v2.begin() + 10, {0, 0});  // 4-byte header length
  EXPECT_EQ(read_npy(v2).bytes, data);
}

TEST(Npy, RefusesMalformedFiles) {
  const std::vector<unsigned char> six(24, 0);
  const auto ok = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", six);
  EXPECT_NO_THROW(read_npy(ok));
  auto bad = ok;
  bad[1] = 'X';
  expect_npy_error([&] { read_npy(bad); }, {"wrong magic", "at byte 0"});
  expect_npy_error([&] { read_npy(bytes_of("\x93NUMPY")); }, {"truncated header"});
  bad = ok;
  bad[6] = 9;
  expect_npy_error([&] { read_npy(bad); }, {"unsupported format version 9.0"});
  bad = ok;
  bad[7] = 5;  // NumPy reads only x.0 files
  expect_npy_error([&] { read_npy(bad); }, {"unsupported format version 1.5", "at byte 7"});
  bad = ok;
  bad[9] = 0x40;  // header length 16384 + ...
  expect_npy_error([&] { read_npy(bad); }, {"truncated: the header is"});
  for (std::size_t n = 0; n < ok.size(); ++n) EXPECT_THROW(read_npy(ok.data(), n), npy_error) << n;
  auto longer = ok;
  longer.push_back(0);
  expect_npy_error([&] { read_npy(longer); }, {"trailing bytes", "needs 24 data bytes, the file has 25"});

  auto header = [&](const std::string& dict, std::size_t data_bytes = 24) {
    return npy_file(dict, std::vector<unsigned char>(data_bytes, 0));
  };
  expect_npy_error([&] { read_npy(header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }")); },
                   {"Fortran-order", "C order only"});
  expect_npy_error([&] { read_npy(header("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }")); },
                   {"big-endian"});
  expect_npy_error([&] { read_npy(header("{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }")); },
                   {"unsupported dtype '<c8'"});
  expect_npy_error([&] { read_npy(header("{'descr': '<f4', 'shape': (2, 3), }")); }, {"lacks"});
  expect_npy_error([&] { read_npy(header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}")); },
                   {"unknown header key 'x'"});
  expect_npy_error([&] { read_npy(header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}")); },
                   {"'descr' appears twice"});
  expect_npy_error([&] { read_npy(header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }")); },
                   {"non-negative integer"});
  // Python reads "(6)" as the integer 6; NumPy refuses it as a shape.
  expect_npy_error([&] { read_npy(header("{'descr': '<f4', 'fortran_order': False, 'shape': (6), }")); },
                   {"a one-axis shape is written (n,)"});
  EXPECT_EQ(read_npy(header("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }")).extents,
            (std::vector<std::int64_t>{6}));
  expect_npy_error([&] { read_npy(header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3 }")); },
                   {"expected ',' or ')'"});
  expect_npy_error([&] { read_npy(header("{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3), }")); },
                   {"malformed header"});
  expect_npy_error([&] { read_npy(header("['descr', '<f4']")); }, {"expected '{'"});
  expect_npy_error([&] { read_npy(header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } junk")); },
                   {"unexpected text"});
  // Hostile shapes: overflow, and a huge count with no data behind it (nothing is allocated).
  expect_npy_error([&] { read_npy(header("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999, 1), }")); },
                   {"shape overflow"});
  expect_npy_error([&] { read_npy(header("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }")); },
                   {"shape overflow"});
  expect_npy_error([&] { read_npy(header("{'descr': '<f8', 'fortran_order': False, 'shape': (100000000, 100000000), }")); },
                   {"truncated", "needs 80000000000000000 data bytes"});
  expect_npy_error([&] { read_npy(header("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", 0)); },
                   {"truncated"});
  bad = header("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", 3);
  bad.back() = 2;
  expect_npy_error([&] { read_npy(bad); }, {"bool element 2 is neither 0 nor 1"});
  // Reading into a tensor of another dtype or rank is refused too.
  EXPECT_THROW((read_npy_as<double, shape<2, 3>>(ok)), value_error);
  EXPECT_THROW((read_npy_as<float, shape<6>>(ok)), shape_error);
  EXPECT_THROW((read_npy_as<float, shape<3, 2>>(ok)), shape_error);
}

TEST(Npy, FilesMustBeRegularAndMessagesStayShort) {
  try {
    load_npy("/dev/zero");
    ADD_FAILURE() << "expected a file_error";
  } catch (const file_error& e) {
    EXPECT_NE(std::string(e.what()).find("npy file '/dev/zero': is a character device"), std::string::npos) << e.what();
  }
  const std::string key(30000, 'q');
  try {
    read_npy(npy_file("{'" + key + "': '<f4', }", {}));
    ADD_FAILURE() << "expected an npy_error";
  } catch (const npy_error& e) {
    EXPECT_LT(std::string(e.what()).size(), 300u);
    EXPECT_NE(std::string(e.what()).find("(30000 bytes)"), std::string::npos) << e.what();
  }
  const std::string path = ::testing::TempDir() + "symflow_npy_" + std::to_string(::getpid()) + ".npy";
  { std::ofstream(path, std::ios::binary) << "\x93NUMPX"; }
  try {
    load_npy(path);
    ADD_FAILURE() << "expected an npy_error";
  } catch (const npy_error& e) {
    EXPECT_NE(std::string(e.what()).find("npy file '" + path + "': npy: wrong magic"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}
