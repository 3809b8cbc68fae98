// The dtype table (core/dtype.hpp) against facts written down independently of it: sizeof of each
// C++ type, NumPy's descr strings, the safetensors dtype strings, ONNX's TensorProto.DataType and
// TensorFlow's DataType numbers as published; lookups by name and code that round-trip and refuse
// unknown values with a symflow::error naming the value; and the formats' own accessors, which
// must agree with the table since they read it.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>

#include <symflow/core/dtype.hpp>
#include <symflow/debug/tensorboard/graph_def.hpp>
#include <symflow/io/npy.hpp>
#include <symflow/io/safetensors_header.hpp>

using namespace symflow;

namespace {

// One dtype's facts, each from its source rather than from the table.
struct published {
  dtype type;
  std::string_view name;         // symflow's documented spelling (docs, graph files)
  std::size_t size;              // sizeof of the C++ type, filled in below
  std::string_view npy;          // numpy.dtype(...).str on a little-endian host
  std::string_view safetensors;  // safetensors' Dtype enum (serde names)
  std::int32_t onnx;             // onnx.proto TensorProto.DataType
  std::int32_t tensorflow;       // tensorflow/core/framework/types.proto DataType
  std::string_view cpp;
  std::string_view cuda;
};

const published facts[] = {
    {dtype::f32, "f32", sizeof(float), "<f4", "F32", /*FLOAT*/ 1, /*DT_FLOAT*/ 1, "float", "float"},
    {dtype::f64, "f64", sizeof(double), "<f8", "F64", /*DOUBLE*/ 11, /*DT_DOUBLE*/ 2, "double", "double"},
    {dtype::i32, "i32", sizeof(std::int32_t), "<i4", "I32", /*INT32*/ 6, /*DT_INT32*/ 3, "std::int32_t", "int"},
    {dtype::i64, "i64", sizeof(std::int64_t), "<i8", "I64", /*INT64*/ 7, /*DT_INT64*/ 9, "std::int64_t", "long long"},
    {dtype::boolean, "bool", sizeof(bool), "|b1", "BOOL", /*BOOL*/ 9, /*DT_BOOL*/ 10, "bool", "bool"},
    {dtype::f16, "f16", sizeof(Eigen::half), "<f2", "F16", /*FLOAT16*/ 10, /*DT_HALF*/ 19, "Eigen::half", "__half"},
    // NumPy has no bfloat16.
    {dtype::bf16, "bf16", sizeof(Eigen::bfloat16), "", "BF16", /*BFLOAT16*/ 16, /*DT_BFLOAT16*/ 14, "Eigen::bfloat16",
     "__nv_bfloat16"},
    {dtype::i8, "i8", sizeof(std::int8_t), "|i1", "I8", /*INT8*/ 3, /*DT_INT8*/ 6, "std::int8_t", "signed char"},
    {dtype::u8, "u8", sizeof(std::uint8_t), "|u1", "U8", /*UINT8*/ 2, /*DT_UINT8*/ 4, "std::uint8_t", "unsigned char"},
    {dtype::i16, "i16", sizeof(std::int16_t), "<i2", "I16", /*INT16*/ 5, /*DT_INT16*/ 5, "std::int16_t", "short"},
    {dtype::u16, "u16", sizeof(std::uint16_t), "<u2", "U16", /*UINT16*/ 4, /*DT_UINT16*/ 17, "std::uint16_t",
     "unsigned short"},
    {dtype::u32, "u32", sizeof(std::uint32_t), "<u4", "U32", /*UINT32*/ 12, /*DT_UINT32*/ 22, "std::uint32_t",
     "unsigned int"},
    {dtype::u64, "u64", sizeof(std::uint64_t), "<u8", "U64", /*UINT64*/ 13, /*DT_UINT64*/ 23, "std::uint64_t",
     "unsigned long long"},
};

// The text of the symflow::error f throws; a test failure when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const symflow::error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no symflow::error thrown";
  return "";
}

TEST(DtypeTable, HasOneRowPerDtypeInEnumOrder) {
  ASSERT_EQ(dtype_count, std::size(facts));
  for (std::size_t i = 0; i < dtype_count; ++i) {
    EXPECT_EQ(static_cast<std::size_t>(dtype_infos[i].type), i);
    EXPECT_EQ(dtype_infos[i].type, facts[i].type);
  }
}

TEST(DtypeTable, RowsMatchPublishedFacts) {
  for (const published& f : facts) {
    SCOPED_TRACE(std::string(f.name));
    const dtype_info& row = dtype_info_of(f.type);
    EXPECT_EQ(row.type, f.type);
    EXPECT_EQ(row.name, f.name);
    EXPECT_EQ(row.size, f.size);
    EXPECT_EQ(row.npy_descr, f.npy);
    EXPECT_EQ(row.safetensors, f.safetensors);
    EXPECT_EQ(row.onnx, f.onnx);
    EXPECT_EQ(row.tensorflow, f.tensorflow);
    EXPECT_EQ(row.cpp, f.cpp);
    EXPECT_EQ(row.cuda, f.cuda);
    EXPECT_EQ(dtype_name(f.type), f.name);
    EXPECT_EQ(dtype_size(f.type), f.size);
  }
  // The sizes the formats assume, whatever the platform says (.npy '<f4' is 4 bytes, '|b1' one).
  EXPECT_EQ(dtype_size(dtype::f32), 4u);
  EXPECT_EQ(dtype_size(dtype::f64), 8u);
  EXPECT_EQ(dtype_size(dtype::i32), 4u);
  EXPECT_EQ(dtype_size(dtype::i64), 8u);
  EXPECT_EQ(dtype_size(dtype::boolean), 1u);
  // NVRTC is LP64 like the host: its "int" and "long long" have the sizes of int32 and int64.
  EXPECT_EQ(sizeof(int), sizeof(std::int32_t));
  EXPECT_EQ(sizeof(long long), sizeof(std::int64_t));
}

TEST(DtypeTable, CppTypesMatchRows) {
  static_assert(std::is_same_v<dtype_type_t<dtype::f32>, float>);
  static_assert(std::is_same_v<dtype_type_t<dtype::f64>, double>);
  static_assert(std::is_same_v<dtype_type_t<dtype::i32>, std::int32_t>);
  static_assert(std::is_same_v<dtype_type_t<dtype::i64>, std::int64_t>);
  static_assert(std::is_same_v<dtype_type_t<dtype::boolean>, bool>);
  static_assert(dtype_v<float> == dtype::f32 && dtype_v<double> == dtype::f64 && dtype_v<std::int32_t> == dtype::i32 &&
                dtype_v<std::int64_t> == dtype::i64 && dtype_v<bool> == dtype::boolean);
  static_assert(!is_supported_dtype_v<char> && is_supported_dtype_v<std::uint8_t> && !is_supported_dtype_v<long double> &&
                !is_supported_dtype_v<const float>);
  for (const published& f : facts) {
    SCOPED_TRACE(std::string(f.name));
    EXPECT_EQ(visit_dtype(f.type, [](auto t) { return sizeof(t); }), f.size);
    EXPECT_EQ(visit_dtype(f.type, [](auto t) { return dtype_v<decltype(t)>; }), f.type);
  }
  // visit_dtype returns what f returns, void included.
  int calls = 0;
  visit_dtype(dtype::i64, [&](auto) { ++calls; });
  EXPECT_EQ(calls, 1);
}

TEST(DtypeTable, LookupsRoundTrip) {
  for (const published& f : facts) {
    SCOPED_TRACE(std::string(f.name));
    EXPECT_EQ(dtype_from_name(f.name), f.type);
    EXPECT_EQ(dtype_by_name(f.name), f.type);
    if (!f.npy.empty()) EXPECT_EQ(dtype_by_npy_descr(f.npy), f.type);
    EXPECT_EQ(dtype_by_safetensors(f.safetensors), f.type);
    EXPECT_EQ(dtype_by_onnx(f.onnx), f.type);
    EXPECT_EQ(dtype_by_tensorflow(f.tensorflow), f.type);
    EXPECT_EQ(find_dtype(&dtype_info::cpp, f.cpp), f.type);
    EXPECT_EQ(find_dtype(&dtype_info::cuda, f.cuda), f.type);
    EXPECT_EQ(dtype_by_name(dtype_name(f.type)), f.type);
  }
  static_assert(dtype_from_name("i32") == dtype::i32);
  static_assert(find_dtype(&dtype_info::onnx, 11) == dtype::f64);
}

TEST(DtypeTable, UnknownNamesAndCodesAreRefusedNamingTheValue) {
  EXPECT_FALSE(dtype_from_name("f8").has_value());
  EXPECT_FALSE(dtype_from_name("F32").has_value());  // names are case-sensitive
  EXPECT_FALSE(dtype_from_name("").has_value());
  EXPECT_FALSE(find_dtype(&dtype_info::onnx, 0).has_value());  // UNDEFINED

  EXPECT_EQ(error_of([] { dtype_by_name("f8"); }), "unknown dtype name 'f8'");
  EXPECT_EQ(error_of([] { dtype_by_npy_descr("<c8"); }), "unknown NumPy descr '<c8'");
  EXPECT_EQ(error_of([] { dtype_by_npy_descr(""); }), "unknown NumPy descr ''");  // bf16's empty cell is no descr
  EXPECT_EQ(error_of([] { dtype_by_safetensors("F8_E4M3"); }), "unknown safetensors dtype 'F8_E4M3'");
  EXPECT_EQ(error_of([] { dtype_by_onnx(14); }), "unknown ONNX data type 14");              // COMPLEX64
  EXPECT_EQ(error_of([] { dtype_by_tensorflow(8); }), "unknown TensorFlow DataType 8");  // DT_COMPLEX64
  // A hostile name is quoted in part only.
  const std::string long_name(1000, 'x');
  EXPECT_LT(error_of([&] { dtype_by_name(long_name); }).size(), 200u);
  // A byte that is no enumerator.
  const auto corrupt = static_cast<dtype>(200);
  EXPECT_EQ(find_dtype_info(corrupt), nullptr);
  EXPECT_EQ(dtype_name(corrupt), "?");
  EXPECT_EQ(dtype_size(corrupt), 0u);
  EXPECT_EQ(error_of([&] { dtype_info_of(corrupt); }), "unknown dtype code 200");
  EXPECT_EQ(error_of([&] { visit_dtype(corrupt, [](auto) {}); }), "unknown dtype code 200");
}

TEST(DtypeTable, NamesAndCodesAreDistinct) {
  std::set<std::string_view> names, npy, safetensors;
  std::set<std::int32_t> onnx, tensorflow;
  for (const dtype_info& row : dtype_infos) {
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    if (!row.npy_descr.empty()) EXPECT_TRUE(npy.insert(row.npy_descr).second) << row.npy_descr;
    EXPECT_TRUE(safetensors.insert(row.safetensors).second) << row.safetensors;
    EXPECT_TRUE(onnx.insert(row.onnx).second) << row.onnx;
    EXPECT_TRUE(tensorflow.insert(row.tensorflow).second) << row.tensorflow;
  }
}

// The formats' accessors read the table, so they agree with the published facts too.
TEST(DtypeTable, FormatAccessorsAgree) {
  for (const published& f : facts) {
    SCOPED_TRACE(std::string(f.name));
    EXPECT_EQ(detail::npy_descr(f.type), f.npy);
    EXPECT_EQ(detail::safetensors_dtype_name(f.type), f.safetensors);
    EXPECT_EQ(static_cast<std::int32_t>(tensorboard::tf_data_type_of(f.type)), f.tensorflow);
  }
  EXPECT_EQ(detail::known_safetensors_dtypes(), "F32, F64, I32, I64, BOOL, F16, BF16, I8, U8, I16, U16, U32 and U64");
  EXPECT_EQ(static_cast<std::int32_t>(tensorboard::tf_data_type::dt_float), 1);
  EXPECT_EQ(static_cast<std::int32_t>(tensorboard::tf_data_type::dt_bool), 10);
}

}  // namespace
