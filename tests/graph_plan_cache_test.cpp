// The caches of plans and gradient graphs (runtime/plan_cache.hpp): a rebuilt graph of the same
// structure reuses them and gets the same results; a graph differing in an attribute, a shape or a
// dtype does not; data is never part of the key; the caches stay within their capacity.
#include <gtest/gtest.h>

#include <cstring>
#include <symflow/graph/all.hpp>
#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/runtime/plan_cache.hpp>
#include <thread>

using namespace symflow;

namespace {

struct model_options {
  std::int64_t features = 6, hidden = 5, classes = 3;
  dtype type = dtype::f32;
  double scale = 0.5;                 // a literal's value
  float constant_value = 0.25f;       // a constant's data
};

// A small classifier like examples/graph_model.hpp, with a constant and a literal.
graph model(const model_options& o = {}) {
  graph_builder b;
  auto x = b.input("x", o.type, {-1, o.features});
  auto labels = b.input("labels", dtype::i32, {-1});
  auto W1 = b.parameter("W1", o.type, {o.features, o.hidden});
  auto b1 = b.parameter("b1", o.type, {o.hidden});
  auto W2 = b.parameter("W2", o.type, {o.hidden, o.classes});
  graph_tensor c{o.type, {o.classes}, {}};
  for (std::int64_t i = 0; i < o.classes; ++i) {
    if (o.type == dtype::f32) {
      const float v = o.constant_value * float(i + 1);
      c.bytes.insert(c.bytes.end(), reinterpret_cast<const unsigned char*>(&v), reinterpret_cast<const unsigned char*>(&v) + 4);
    } else {
      const double v = o.constant_value * double(i + 1);
      c.bytes.insert(c.bytes.end(), reinterpret_cast<const unsigned char*>(&v), reinterpret_cast<const unsigned char*>(&v) + 8);
    }
  }
  auto offset = b.constant(c);
  auto z = matmul(relu(matmul(x, W1) + b1) * o.scale, W2) + offset;
  auto per_example = reduce_value(ops::sum_op{}, one_hot(labels, o.classes, o.type) * -log_softmax(z), {1}, false);
  return b.build({reduce_value(ops::mean_op{}, per_example, {}, false)});
}

runtime_tensor filled(dtype t, runtime_extents e, double seed) {
  runtime_tensor r(t, e);
  std::size_t n = 1;
  for (auto x : e) n *= x;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = 0.1 * double((i * 7 + std::size_t(seed * 13)) % 11) - 0.5;
    if (t == dtype::f32) r.data<float>()[i] = float(v);
    else r.data<double>()[i] = v;
  }
  return r;
}

runtime_feeds feeds_for(const model_options& o, std::size_t batch) {
  runtime_feeds f;
  f["x"] = filled(o.type, {batch, std::size_t(o.features)}, 1);
  runtime_tensor labels(dtype::i32, {batch});
  for (std::size_t i = 0; i < batch; ++i) labels.data<std::int32_t>()[i] = std::int32_t(i % std::size_t(o.classes));
  f["labels"] = labels;
  f["W1"] = filled(o.type, {std::size_t(o.features), std::size_t(o.hidden)}, 2);
  f["b1"] = filled(o.type, {std::size_t(o.hidden)}, 3);
  f["W2"] = filled(o.type, {std::size_t(o.hidden), std::size_t(o.classes)}, 4);
  return f;
}

const std::vector<std::string> wrt{"W1", "b1", "W2"};

void expect_same_tensors(const std::vector<runtime_tensor>& a, const std::vector<runtime_tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].type(), b[k].type()) << k;
    ASSERT_EQ(a[k].extents(), b[k].extents()) << k;
    EXPECT_EQ(std::memcmp(a[k].bytes(), b[k].bytes(), a[k].byte_size()), 0) << k;
  }
}

class PlanCache : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime_plan_cache().set_capacity(64);
    gradient_cache().set_capacity(64);
    runtime_plan_cache().clear();
    gradient_cache().clear();
  }
  void TearDown() override { SetUp(); }
};

}  // namespace

TEST_F(PlanCache, RebuiltGraphHitsAndGivesIdenticalResults) {
  const model_options o;
  const auto feeds = feeds_for(o, 4);
  const graph g1 = model(o);
  const graph d1 = differentiate(g1, wrt);
  EXPECT_EQ(gradient_cache().stats().misses, 1u);
  const auto first = interpreter(d1).run(feeds);
  EXPECT_EQ(runtime_plan_cache().stats().misses, 1u);

  const graph g2 = model(o);  // the training loop's rebuild
  const graph d2 = differentiate(g2, wrt);
  EXPECT_EQ(gradient_cache().stats().hits, 1u);
  EXPECT_EQ(d2, d1);
  EXPECT_EQ(d2, runtime_detail::differentiate_uncached(g2, wrt));
  const interpreter run2(d2);
  const auto second = run2.run(feeds);
  EXPECT_EQ(runtime_plan_cache().stats().hits, 1u);
  expect_same_tensors(first, second);
  expect_same_tensors(second, run2.run(feeds));
  EXPECT_EQ(runtime_plan_cache().stats().hits, 2u);
  EXPECT_EQ(runtime_plan_cache().stats().size, 1u);
}

TEST_F(PlanCache, DataIsNotInTheKeyButIsInTheResult) {
  model_options a, b;
  b.constant_value = 4.0f;
  const graph ga = model(a), gb = model(b);
  ASSERT_NE(ga, gb);
  EXPECT_TRUE(same_graph_structure(ga, gb));
  EXPECT_EQ(graph_structure_hash(ga), graph_structure_hash(gb));
  const graph da = differentiate(ga, wrt);
  const graph db = differentiate(gb, wrt);
  EXPECT_EQ(gradient_cache().stats().hits, 1u);
  EXPECT_EQ(db, runtime_detail::differentiate_uncached(gb, wrt));  // gb's constant, not ga's
  EXPECT_NE(da, db);

  const auto feeds = feeds_for(a, 3);
  const auto ra = interpreter(da).run(feeds);
  const auto rb = interpreter(db).run(feeds);
  EXPECT_EQ(runtime_plan_cache().stats().hits, 1u);
  runtime_plan_cache().set_capacity(0);  // the same run without the cache
  expect_same_tensors(rb, interpreter(db).run(feeds));
  EXPECT_NE(std::memcmp(ra[0].bytes(), rb[0].bytes(), ra[0].byte_size()), 0);
}

TEST_F(PlanCache, EmbeddedParameterValuesComeFromTheGraphAtHand) {
  graph g1 = model(), g2 = model();
  const auto f = feeds_for({}, 2);
  auto embed = [&](graph& g, double seed) {
    for (auto& p : g.parameters) {
      const runtime_tensor t = filled(p.type.type, runtime_extents(p.type.shape.begin(), p.type.shape.end()), seed);
      p.value = graph_tensor{t.type(), std::vector<std::int64_t>(p.type.shape), std::vector<unsigned char>(
          static_cast<const unsigned char*>(t.bytes()), static_cast<const unsigned char*>(t.bytes()) + t.byte_size())};
    }
  };
  embed(g1, 1);
  embed(g2, 5);
  (void)differentiate(g1, wrt);
  const graph d2 = differentiate(g2, wrt);
  EXPECT_EQ(gradient_cache().stats().hits, 1u);
  EXPECT_EQ(d2, runtime_detail::differentiate_uncached(g2, wrt));
  runtime_feeds leaves{{"x", f.at("x")}, {"labels", f.at("labels")}};
  const auto cached = interpreter(d2).run(leaves);
  runtime_plan_cache().set_capacity(0);
  expect_same_tensors(cached, interpreter(runtime_detail::differentiate_uncached(g2, wrt)).run(leaves));
}

TEST_F(PlanCache, AttributeShapeOrDtypeChangesMiss) {
  const graph base = model();
  (void)differentiate(base, wrt);
  (void)interpreter(differentiate(base, wrt)).run(feeds_for({}, 2));
  const auto plans = runtime_plan_cache().stats(), grads = gradient_cache().stats();
  EXPECT_EQ(grads.hits, 1u);

  model_options literal, shape, type, depth;
  literal.scale = 0.75;
  shape.features = 7;
  type.type = dtype::f64;
  depth.classes = 4;
  for (const auto& o : {literal, shape, type, depth}) {
    const graph g = model(o);
    EXPECT_FALSE(same_graph_structure(g, base));
    EXPECT_NE(graph_structure_hash(g), graph_structure_hash(base));
    const graph d = differentiate(g, wrt);
    EXPECT_EQ(d, runtime_detail::differentiate_uncached(g, wrt));
    (void)interpreter(d).run(feeds_for(o, 2));
  }
  EXPECT_EQ(gradient_cache().stats().hits, grads.hits);
  EXPECT_EQ(gradient_cache().stats().misses, grads.misses + 4);
  EXPECT_EQ(runtime_plan_cache().stats().hits, plans.hits);
  EXPECT_EQ(runtime_plan_cache().stats().misses, plans.misses + 4);

  // Another wrt list, another gradient.
  (void)differentiate(base, {"W2"});
  EXPECT_EQ(gradient_cache().stats().hits, grads.hits);

  // A node's attribute changed in place (a reduction's axes), and a node's name.
  graph g = base;
  for (auto& n : g.nodes)
    if (n.op == "sum") n.attributes[0].value = std::vector<std::int64_t>{0};
  EXPECT_FALSE(same_graph_structure(g, base));
  graph renamed = base;
  renamed.nodes.back().name = "other";
  EXPECT_FALSE(same_graph_structure(renamed, base));
  EXPECT_NE(graph_structure_hash(renamed), graph_structure_hash(base));
}

TEST_F(PlanCache, PlansAreKeyedByTheLeavesExtents) {
  const graph d = differentiate(model(), wrt);
  const interpreter run(d);
  const auto four = run.run(feeds_for({}, 4));
  const auto five = run.run(feeds_for({}, 5));
  EXPECT_EQ(runtime_plan_cache().stats().misses, 2u);
  EXPECT_EQ(four[1].extents(), (runtime_extents{6, 5}));
  expect_same_tensors(four, run.run(feeds_for({}, 4)));
  expect_same_tensors(five, run.run(feeds_for({}, 5)));
  EXPECT_EQ(runtime_plan_cache().stats().hits, 2u);
  // Unfused runs have plans of their own.
  interpreter_options unfused;
  unfused.fuse = false;
  (void)interpreter(d, unfused).run(feeds_for({}, 4));
  EXPECT_EQ(runtime_plan_cache().stats().misses, 3u);
}

TEST_F(PlanCache, BoundedLeastRecentlyUsedFirst) {
  runtime_plan_cache().set_capacity(2);
  gradient_cache().set_capacity(2);
  model_options o[3];
  o[1].hidden = 4;
  o[2].hidden = 3;
  graph d[3];
  for (int i = 0; i < 3; ++i) {
    d[i] = differentiate(model(o[i]), wrt);
    (void)interpreter(d[i]).run(feeds_for(o[i], 2));
  }
  EXPECT_EQ(runtime_plan_cache().stats().size, 2u);
  EXPECT_EQ(gradient_cache().stats().size, 2u);
  (void)differentiate(model(o[2]), wrt);  // kept
  EXPECT_EQ(gradient_cache().stats().hits, 1u);
  (void)differentiate(model(o[0]), wrt);  // the oldest: gone
  EXPECT_EQ(gradient_cache().stats().hits, 1u);
  EXPECT_EQ(gradient_cache().stats().size, 2u);
  gradient_cache().set_capacity(1);
  EXPECT_EQ(gradient_cache().stats().size, 1u);
  (void)differentiate(model(o[0]), wrt);  // the most recent stays
  EXPECT_EQ(gradient_cache().stats().hits, 2u);
  gradient_cache().set_capacity(0);
  EXPECT_EQ(gradient_cache().stats().size, 0u);
  EXPECT_EQ(differentiate(model(o[0]), wrt), d[0]);
  EXPECT_EQ(gradient_cache().stats().size, 0u);
}

TEST_F(PlanCache, EntriesUnderOneHashAreToldApartByTheirContent) {
  graph_lru_cache<int> cache(4);
  cache.insert(7, std::make_shared<const int>(1));
  cache.insert(7, std::make_shared<const int>(2));
  auto two = cache.find(7, [](int v) { return v == 2; });
  auto one = cache.find(7, [](int v) { return v == 1; });
  ASSERT_TRUE(one && two);
  EXPECT_EQ(*one, 1);
  EXPECT_EQ(*two, 2);
  EXPECT_FALSE(cache.find(7, [](int v) { return v == 3; }));
  EXPECT_FALSE(cache.find(8, [](int) { return true; }));
  EXPECT_EQ(cache.stats().hits, 2u);
  EXPECT_EQ(cache.stats().misses, 2u);
}

TEST_F(PlanCache, ThreadsShareTheCaches) {
  const model_options o;
  const auto feeds = feeds_for(o, 3);
  const auto expected = interpreter(runtime_detail::differentiate_uncached(model(o), wrt)).run(feeds);
  std::vector<std::vector<runtime_tensor>> results(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) results[t] = interpreter(differentiate(model(o), wrt)).run(feeds);
    });
  for (auto& t : threads) t.join();
  for (const auto& r : results) expect_same_tensors(r, expected);
  EXPECT_GE(gradient_cache().stats().hits, 70u);
  EXPECT_LE(gradient_cache().stats().size, 4u);
}
