#include <doctest/doctest.h>

#include <vector>

#include "kernels/cpu/optimizer.hpp"
#include "kernels/reference/optimizer.hpp"
#include "tests/kernels/kernel_test_util.hpp"

using namespace meshsim::kernels;
using namespace meshsim::kernels::cpu;
using namespace meshsim::kernels::test;

TEST_CASE("adam_update over three steps equals the float64 reference") {
  // AdamW (lr 1e-2, weight decay 0.1), 5000 fp32 parameters with fp32 moments: after 3 steps the
  // parameters and moments match to 1e-5 relative to their largest magnitude.
  Rng rng(1);
  const AdamConfig cfg{1e-2, 0.9, 0.999, 1e-8, 0.1};
  const reference::AdamHyper hyper{1e-2, 0.9, 0.999, 1e-8, 0.1};
  Buffer p = random_buffer(ScalarType::fp32, 5000, rng);
  Buffer m(ScalarType::fp32, 5000), v(ScalarType::fp32, 5000);
  std::vector<double> wp = p.values(), wm(5000), wv(5000);
  for (int step = 1; step <= 3; ++step) {
    Buffer g = random_buffer(ScalarType::fp32, 5000, rng);
    reference::adam_update(hyper, step, wp, g.values(), wm, wv);
    adam_update(cfg, step, p.vector(), g.vector(), m.vector(), v.vector());
  }
  CHECK(max_rel_error(p.values(), wp) <= 1e-5);
  CHECK(max_rel_error(m.values(), wm) <= 1e-5);
  CHECK(max_rel_error(v.values(), wv) <= 1e-5);
}

TEST_CASE("adam_update with an fp32 master copy: bf16 params are the master's rounding") {
  Rng rng(2);
  Buffer master = random_buffer(ScalarType::fp32, 1000, rng);
  Buffer p(ScalarType::bf16, 1000);
  p.set(master.values());
  Buffer g = random_buffer(ScalarType::bf16, 1000, rng);
  Buffer m(ScalarType::fp32, 1000), v(ScalarType::fp32, 1000);
  std::vector<double> wp = master.values(), wm(1000), wv(1000);
  reference::adam_update(reference::AdamHyper{}, 1, wp, g.values(), wm, wv);
  adam_update(AdamConfig{}, 1, p.vector(), g.vector(), m.vector(), v.vector(), master.vector());
  CHECK(max_rel_error(master.values(), wp) <= 1e-5);
  Buffer rounded(ScalarType::bf16, 1000);
  rounded.set(master.values());
  CHECK(p.values() == rounded.values());
  CHECK_THROWS_AS(adam_update(AdamConfig{}, 0, p.vector(), g.vector(), m.vector(), v.vector()),
                  KernelError);
}
