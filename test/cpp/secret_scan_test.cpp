// The secret scan's candidates (sluice/secret_scan.hpp): each rule that makes a position a candidate,
// and the positions it must leave out. test/js/gateway-secret-scan.test.js checks through the wasm
// module that the candidates cover every position the JavaScript matcher masks from.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "sluice/secret_scan.hpp"

namespace {

using sluice::SecretScanTables;

// Tables (and the one third set that follows them) for one fragment whose first three bytes are `a`,
// `b`, `c`, and a short secret beginning with `s`; an escape of `a` or `s` matters.
struct Tables {
  std::vector<uint8_t> memory = std::vector<uint8_t>(sluice::secret_scan_tables_bytes(1) + alignof(SecretScanTables));
  SecretScanTables* t = reinterpret_cast<SecretScanTables*>(memory.data());
  SecretScanTables& operator*() const { return *t; }
  SecretScanTables* operator->() const { return t; }
};

Tables tables_for(char a, char b, char c, char s) {
  Tables tables;
  auto& t = *tables;
  const auto pair = (static_cast<uint32_t>(static_cast<uint8_t>(a)) << 8) | static_cast<uint8_t>(b);
  const auto third = static_cast<uint8_t>(c);
  t.has_fragments = 1;
  t.pair_count = 1;
  t.fragment_first[static_cast<uint8_t>(a)] = 1;
  t.escape_value_start[static_cast<uint8_t>(a)] = 1;
  t.escape_value_start[static_cast<uint8_t>(s)] = 1;
  t.pair_bits[pair >> 5] |= 1u << (pair & 31);
  t.pair_index[pair] = 1;
  reinterpret_cast<sluice::ThirdSet*>(&t + 1)[0].words[third >> 5] |= 1u << (third & 31);
  t.raw_start[static_cast<uint8_t>(s)] = 1;
  sluice::prepare_secret_scan(t);
  return tables;
}

std::vector<uint32_t> candidates(const SecretScanTables& t, const std::string& text) {
  std::vector<uint32_t> out(text.size());
  const auto count = sluice::scan_secret_candidates(t, reinterpret_cast<const uint8_t*>(text.data()), static_cast<uint32_t>(text.size()), out.data());
  out.resize(count);
  return out;
}

}  // namespace

TEST_CASE("secret scan: a fragment's first three bytes, and only with its third byte", "[secret_scan]") {
  const auto t = tables_for('Q', 'R', 'T', '!');
  CHECK(candidates(*t, "..QRT..") == std::vector<uint32_t>{2});
  CHECK(candidates(*t, "..QRv..").empty());
  // At the end of the text the third byte is unknown: the pair alone is a candidate.
  CHECK(candidates(*t, "....QR") == std::vector<uint32_t>{4});
}

TEST_CASE("secret scan: the byte of a short secret, anywhere", "[secret_scan]") {
  const auto t = tables_for('Q', 'R', 'T', '!');
  CHECK(candidates(*t, "a!b!") == std::vector<uint32_t>{1, 3});
}

TEST_CASE("secret scan: an escape of a character that begins a secret or a fragment", "[secret_scan]") {
  const auto t = tables_for('Q', 'R', 'T', '!');
  // Q is 0x51, ! is 0x21: spelled as %XX, \uXXXX, \xXX, &#N; and &#xH;.
  CHECK(candidates(*t, "%51 %21 %52 %zz %5") == std::vector<uint32_t>{0, 4});
  CHECK(candidates(*t, "\\u0051 \\x21 \\u0052 \\q") == std::vector<uint32_t>{0, 7});
  CHECK(candidates(*t, "&#81; &#x21; &#82; &#81") == std::vector<uint32_t>{0, 6});
  // A named reference is a candidate whatever it names (the scan does not look names up).
  CHECK(candidates(*t, "&amp; &zz & ;") == std::vector<uint32_t>{0});
  // + spells a space, which begins nothing here.
  CHECK(candidates(*t, "a+b").empty());
}

TEST_CASE("secret scan: a fragment's first byte then an escape", "[secret_scan]") {
  const auto t = tables_for('Q', 'R', 'T', '!');
  // Q then %52 ("R" spelled): a candidate at Q (the escape spells no first byte); Q then %zz: none.
  CHECK(candidates(*t, "Q%52T") == std::vector<uint32_t>{0});
  CHECK(candidates(*t, "Q%zzT").empty());
  // Q then an escape of a character no fragment continues Q with (A, or the space a + spells): none,
  // since the matcher reads an escape as that character only.
  CHECK(candidates(*t, "Q%41T").empty());
  CHECK(candidates(*t, "Q+RT").empty());
  // A named reference may name anything: a candidate after Q (and where it begins).
  CHECK(candidates(*t, "Q&amp;T") == std::vector<uint32_t>{0, 1});
  // A byte that begins no fragment, then an escape of one that does: only the escape.
  CHECK(candidates(*t, "w%51") == std::vector<uint32_t>{1});
  // The pair as it is, then an escape as the third byte: a candidate when it spells a third byte of
  // the pair's fragments (T), not otherwise (A).
  CHECK(candidates(*t, "QR%54") == std::vector<uint32_t>{0});
  CHECK(candidates(*t, "QR\\u0054") == std::vector<uint32_t>{0});
  CHECK(candidates(*t, "QR%41").empty());
}

TEST_CASE("secret scan: a + after a fragment's first byte where a fragment goes on with a space", "[secret_scan]") {
  const auto t = tables_for('Q', ' ', 'T', '!');
  CHECK(candidates(*t, "Q+T") == std::vector<uint32_t>{0});
  // (After an escaped second byte the third is not looked at.)
  CHECK(candidates(*t, "Q+v") == std::vector<uint32_t>{0});
  CHECK(candidates(*t, "R+T").empty());
}

TEST_CASE("secret scan: without fragments, pairs are not looked at", "[secret_scan]") {
  auto t = tables_for('Q', 'R', 'T', '!');
  t->has_fragments = 0;
  sluice::prepare_secret_scan(*t);
  CHECK(candidates(*t, "QRT").empty());
}
