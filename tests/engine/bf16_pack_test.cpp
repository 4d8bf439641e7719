// The bf16 packers (engine/kernels/bf16_gemm_parts.h) against bf16_pair, word for word, at
// every length that ends a vector or a pair early. vdpbf16ps reads a subnormal bf16 as zero
// (denormals-are-zero), so a product cannot show how a subnormal was rounded: only the packed
// words can (the plain model of the AMX tiles, in the tests, multiplies them as they are).
#include <doctest/doctest.h>

#include <bit>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/core/rng.h"
#include "engine/kernels/bf16.h"
#include "engine/kernels/bf16_gemm_parts.h"

using namespace vg;

namespace {

// Random floats with every kind of edge mixed in at `every` (0: none): ties to even both
// ways, NaN, infinities, zeros of both signs, the largest float, subnormals when asked.
std::vector<float> edge_floats(int64_t n, int every, bool subnormals, Rng& rng) {
  std::vector<float> edges{1.00390625f,
                           1.01171875f,
                           -1.00390625f,
                           std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           -0.0f,
                           0.0f,
                           std::numeric_limits<float>::max()};
  if (subnormals) edges.insert(edges.end(), {1.5e-39f, -2.9e-40f, 1.0e-45f, 1.1754942e-38f});
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = every && i % every == 0 ? edges[i / every % edges.size()] : float(rng.normal());
  return v;
}

}  // namespace

TEST_CASE("the bf16 packers give bf16_pair's words, subnormals, ties, NaN and infinity included") {
  Rng rng(3);
  for (bool subnormals : {false, true})
    for (int64_t k : {1, 2, 15, 16, 31, 32, 33, 77, 200}) {
      CAPTURE(subnormals);
      CAPTURE(k);
      const int64_t pairs = (k + 1) / 2;
      const std::vector<float> x = edge_floats(3 * k, 5, subnormals, rng);
      const std::vector<float> y = edge_floats(k, 7, subnormals, rng);
      auto pair_at = [&](const float* row, int64_t p) {
        return bf16_pair(row[2 * p], 2 * p + 1 < k ? row[2 * p + 1] : 0.0f);
      };
      // One row's consecutive pairs.
      std::vector<uint32_t> words(size_t(pairs), 7u), plain_words(size_t(pairs), 7u);
      detail::bf16_pairs_of_row(x.data(), k, words.data());
      detail::plain::pairs_of_row(x.data(), k, plain_words.data());
      for (int64_t p = 0; p < pairs; ++p) CHECK(words[p] == pair_at(x.data(), p));
      CHECK(plain_words == words);
      // Short rows (k <= 32), ld apart.
      if (k <= 32) {
        std::vector<uint32_t> rows(size_t(3 * pairs), 7u);
        std::vector<uint32_t> plain_rows(rows.size(), 7u);
        detail::bf16_pairs_of_short_rows(x.data(), k, 3, k, rows.data(), (k + 1) / 2);
        detail::plain::pairs_of_short_rows(x.data(), k, 3, k, plain_rows.data(), (k + 1) / 2);
        for (int64_t r = 0; r < 3; ++r)
          for (int64_t p = 0; p < pairs; ++p)
            CHECK(rows[r * pairs + p] == pair_at(x.data() + r * k, p));
        CHECK(plain_rows == rows);
      }
      // Two rows side by side, and one row with zeros beside it.
      std::vector<uint32_t> both(size_t(k), 7u), alone(size_t(k), 7u);
      std::vector<uint32_t> plain_both(size_t(k), 7u), plain_alone(size_t(k), 7u);
      detail::bf16_pairs_of_rows(x.data(), y.data(), k, both.data());
      detail::bf16_pairs_of_rows(x.data(), nullptr, k, alone.data());
      detail::plain::pairs_of_rows(x.data(), y.data(), k, plain_both.data());
      detail::plain::pairs_of_rows(x.data(), nullptr, k, plain_alone.data());
      for (int64_t i = 0; i < k; ++i) {
        CHECK(both[i] == bf16_pair(x[i], y[i]));
        CHECK(alone[i] == bf16_pair(x[i], 0.0f));
      }
      CHECK(plain_both == both);
      CHECK(plain_alone == alone);
    }
}

// The operands of the fmas' route: each float rounded as to_bf16 rounds it, kept as a float,
// rows ld apart into rows out_ld apart, the floats between untouched; rows end to end as one.
TEST_CASE("bf16_round_rows gives to_bf16's values, subnormals, ties, NaN and infinity included") {
  Rng rng(9);
  for (const int64_t cols : {1, 15, 16, 17, 50})
    for (const bool end_to_end : {false, true}) {
      CAPTURE(cols);
      CAPTURE(end_to_end);
      const int64_t rows = 3, ld = end_to_end ? cols : cols + 5,
                    out_ld = end_to_end ? cols : cols + 2;
      const std::vector<float> x = edge_floats(rows * ld, 3, true, rng);
      std::vector<float> out(size_t(rows * out_ld), 7.0f), plain_out(out.size(), 7.0f);
      detail::bf16_round_rows(x.data(), ld, rows, cols, out.data(), out_ld);
      detail::plain::round_rows(x.data(), ld, rows, cols, plain_out.data(), out_ld);
      CHECK(std::memcmp(plain_out.data(), out.data(), out.size() * sizeof(float)) == 0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < out_ld; ++j) {
          const uint32_t got = std::bit_cast<uint32_t>(out[r * out_ld + j]);
          const uint32_t want =
              j < cols ? uint32_t(to_bf16(x[r * ld + j])) << 16 : std::bit_cast<uint32_t>(7.0f);
          CHECK(got == want);
        }
    }
}

// op(B) as panels: word (p, j) of panel q is the pair of op(B)'s rows 2p and 2p + 1 in column
// 32q + j, B stored as it is or transposed; the columns past n and the pair rows past the last
// (the tiles' padding) are zero, and so is an odd k's last second term.
TEST_CASE("pack_b lays B's pairs of rows out as panels, the padding zero") {
  Rng rng(5);
  const int64_t width = 32;
  // 901 x 300: enough words that the pairs are split over the threads.
  for (const bool tb : {false, true})
    for (const int64_t k : {7, 40, 901})
      for (const int64_t n : {16, 45, 70, 96, 300}) {
        CAPTURE(tb);
        CAPTURE(k);
        CAPTURE(n);
        const int64_t ldb = tb ? 910 : 320;  // B is n x k when transposed
        const int64_t pairs = (k + 1) / 2, stride = pairs + 3, panels = (n + width - 1) / width;
        const std::vector<float> b = edge_floats((tb ? n : k) * ldb, 9, true, rng);
        auto op_b = [&](int64_t r, int64_t col) {
          return r >= k ? 0.0f : tb ? b[col * ldb + r] : b[r * ldb + col];
        };
        std::vector<uint32_t> out(size_t(panels * stride * width), 7u);
        detail::pack_b(tb, k, n, b.data(), ldb, width, stride, out.data());
        for (int64_t q = 0; q < panels; ++q)
          for (int64_t p = 0; p < stride; ++p)
            for (int64_t j = 0; j < width; ++j) {
              const int64_t col = q * width + j;
              const uint32_t expected =
                  p < pairs && col < n ? bf16_pair(op_b(2 * p, col), op_b(2 * p + 1, col)) : 0u;
              CHECK(out[(q * stride + p) * width + j] == expected);
            }
        if (tb) continue;
        // The same B kept as bf16 pairs along its rows (GRN's output), ld words apart, and by
        // pairs of rows (a linear's input, as its forward keeps it), pair_ld apart: the same
        // panels from both.
        const int64_t ld = (n + 1) / 2 + 3, pair_ld = n + 5;
        std::vector<uint32_t> kept(size_t(k * ld), 5u), from_kept(out.size(), 7u);
        for (int64_t r = 0; r < k; ++r)
          for (int64_t p = 0; p < (n + 1) / 2; ++p)
            kept[r * ld + p] = bf16_pair(op_b(r, 2 * p), 2 * p + 1 < n ? op_b(r, 2 * p + 1) : 0.0f);
        detail::pack_kept_b(k, n, kept.data(), ld, false, width, stride, from_kept.data());
        CHECK(from_kept == out);
        std::vector<uint32_t> paired(size_t(pairs * pair_ld), 5u), from_paired(out.size(), 7u);
        for (int64_t p = 0; p < pairs; ++p)
          for (int64_t col = 0; col < n; ++col)
            paired[p * pair_ld + col] = bf16_pair(op_b(2 * p, col), op_b(2 * p + 1, col));
        detail::pack_kept_b(k, n, paired.data(), pair_ld, true, width, stride, from_paired.data());
        CHECK(from_paired == out);
      }
}

// A transposed A's chunk as pairs of rows, with each column's sum taken in double in the order
// of k as it is packed (a weight gradient's bias gradient), and words turned around: the words
// between are left alone. Both ways (AVX-512 where the CPU has it, plain loops) alike, with
// the edge values mixed in: vectors with a subnormal round by the integer add, the rest on the
// bf16 units where the CPU has them. The sums compared bit for bit (NaN and infinity included).
// The AVX-512 loop takes four rows at a time: k covers each count of rows it can have left.
TEST_CASE("interleave_rows_summing and transpose_words give their definitions' words and sums") {
  Rng rng(17);
  for (const int64_t k : {1, 2, 3, 9, 11, 40})
    for (const int64_t count : {1, 15, 16, 70}) {
      CAPTURE(k);
      CAPTURE(count);
      const int64_t ld = count + 3, out_ld = count + 2, pairs = (k + 1) / 2;
      const std::vector<float> x = edge_floats(k * ld, 11, true, rng);
      std::vector<double> want_sums(size_t(count), 0.5);
      std::vector<uint32_t> want(size_t(pairs * out_ld), 7u);
      for (int64_t p = 0; p < pairs; ++p)
        for (int64_t i = 0; i < count; ++i) {
          const float first = x[2 * p * ld + i],
                      second = 2 * p + 1 < k ? x[(2 * p + 1) * ld + i] : 0.0f;
          want[p * out_ld + i] = bf16_pair(first, second);
          want_sums[i] += double(first);
          if (2 * p + 1 < k) want_sums[i] += double(second);
        }
      for (const bool plain : {false, true}) {
        CAPTURE(plain);
        std::vector<double> sums(size_t(count), 0.5);
        std::vector<uint32_t> out(want.size(), 7u);
        (plain ? detail::plain::interleave_rows_summing : detail::interleave_rows_summing)(
            k, count, x.data(), ld, out.data(), out_ld, sums.data());
        CHECK(out == want);
        CHECK(std::memcmp(sums.data(), want_sums.data(), sums.size() * sizeof(double)) == 0);
        // The words (pairs x count, out_ld apart) turned around: count x pairs, pairs + 1 apart.
        std::vector<uint32_t> turned(size_t(count * (pairs + 1)), 9u);
        (plain ? detail::plain::transpose_words : detail::transpose_words)(
            out.data(), pairs, count, out_ld, turned.data(), pairs + 1);
        for (int64_t c = 0; c < count; ++c)
          for (int64_t r = 0; r <= pairs; ++r)
            CHECK(turned[c * (pairs + 1) + r] == (r < pairs ? out[r * out_ld + c] : 9u));
      }
    }
}

TEST_CASE("packed operands start on a cache line at every size, grown or not") {
  // A tile row of 64 bytes that straddles two lines costs the AMX loops over half their speed.
  for (size_t words : {size_t(1), size_t(3), size_t(17), size_t(4096), size_t(1) << 18}) {
    detail::PackedWords packed(words);
    CHECK(reinterpret_cast<uintptr_t>(packed.data()) % 64 == 0);
    packed.resize(3 * words + 5);
    CHECK(reinterpret_cast<uintptr_t>(packed.data()) % 64 == 0);
    detail::PackedFloats rows(words);
    CHECK(reinterpret_cast<uintptr_t>(rows.data()) % 64 == 0);
  }
}
