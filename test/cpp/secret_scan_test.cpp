// The secret scan's candidates (sluice/secret_scan.hpp): each rule that makes a position a candidate,
// and the positions it must leave out. test/js/gateway-secret-scan.test.js checks through the wasm
// module that the candidates cover every position the JavaScript matcher masks from.
#include <catch2/catch.hpp>

#include <algorithm>
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
  std::vector<uint32_t> out(sluice::secret_scan_positions_words(static_cast<uint32_t>(text.size())));
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

namespace {

// Tables as redact.js builds them for one secret (its base64 needles aside): its fragments' first
// three bytes, its first byte, and the run the sparse scan hashes.
Tables tables_of(const std::string& secret) {
  Tables tables;
  auto& t = *tables;
  const auto* b = reinterpret_cast<const uint8_t*>(secret.data());
  const auto n = static_cast<uint32_t>(secret.size());
  t.has_fragments = n > 12 ? 1 : 0;
  t.escape_value_start[b[0]] = 1;
  if (n <= 12) t.raw_start[b[0]] = 1;
  for (uint32_t from = 0; n > 12 && from + 12 <= n; from++) {
    t.fragment_first[b[from]] = 1;
    t.escape_value_start[b[from]] = 1;
    const uint32_t pair = (static_cast<uint32_t>(b[from]) << 8) | b[from + 1];
    t.pair_bits[pair >> 5] |= 1u << (pair & 31);
    t.pair_index[pair] = 1;  // one third set for all pairs: looser than redact.js, never stricter
    reinterpret_cast<sluice::ThirdSet*>(&t + 1)[0].words[b[from + 2] >> 5] |= 1u << (b[from + 2] & 31);
  }
  t.pair_count = 1;
  if (secret.find('/') != std::string::npos) t.named_first['s' >> 5] |= 1u << ('s' & 31);  // &sol;
  sluice::add_secret_scan_run(t, b, n, n < 12 ? n : 12, true);
  sluice::prepare_secret_scan(t);
  return tables;
}

}  // namespace

TEST_CASE("secret scan, sparse: 12 bytes of a secret as they are, at every offset", "[secret_scan]") {
  const std::string secret = "zq/Key\"Value 0123456789-abcdef";
  const auto t = tables_of(secret);
  REQUIRE(t->sparse_min == 12);
  for (uint32_t offset = 0; offset < 40; offset++) {
    for (uint32_t from = 0; from + 12 <= secret.size(); from += 3) {
      const std::string text = std::string(offset, '_') + secret.substr(from, 12) + std::string(20, '_');
      const auto found = candidates(*t, text);
      INFO("offset " << offset << ", from " << from);
      CHECK(std::find(found.begin(), found.end(), offset) != found.end());
    }
  }
}

TEST_CASE("secret scan, sparse: an escape at most 11 bytes into 12 bytes of a secret", "[secret_scan]") {
  const std::string secret = "zq/Key\"Value 0123456789-abcdef";
  const auto t = tables_of(secret);
  const char* spellings[] = {"%2F", "\\u002f", "\\x2F", "&#47;", "&#x2f;", "&sol;", "\\/"};
  for (uint32_t offset = 0; offset < 34; offset++) {
    for (const char* slash : spellings) {
      // The secret's `/` (its byte 2) escaped, in fragments that begin 0 to 2 bytes before it.
      for (uint32_t from = 0; from <= 2; from++) {
        const std::string text = std::string(offset, '_') + secret.substr(from, 2 - from) + slash + secret.substr(3, 9 + from) + "__";
        const auto found = candidates(*t, text);
        INFO("offset " << offset << ", " << slash << ", from " << from);
        CHECK(std::find(found.begin(), found.end(), offset) != found.end());
      }
    }
    // The space (byte 12) as `+`, 11 bytes into a fragment.
    const std::string text = std::string(offset, '_') + secret.substr(1, 11) + "+" + "0123__";
    const auto found = candidates(*t, text);
    CHECK(std::find(found.begin(), found.end(), offset) != found.end());
  }
}

TEST_CASE("secret scan, sparse: escapes that spell nothing of a secret cost no candidate", "[secret_scan]") {
  const auto t = tables_of("bench-upstream-secret-7f3a9c1e5b2d4f60a8e1c3b5");
  std::string soup;
  for (int i = 0; i < 4000; i++) soup += "%&\\+"[(i * 7 + i / 3) % 4];
  CHECK(candidates(*t, soup).empty());
  // The same soup around 12 bytes of the secret, one escaped: candidates there, and only there.
  const std::string text = soup.substr(0, 100) + "bench-upstr%65am" + soup.substr(0, 50);
  const auto found = candidates(*t, text);
  REQUIRE(!found.empty());
  CHECK(found.front() == 100);
  CHECK(found.back() < 116);
}

TEST_CASE("secret scan: a secret of 6 bytes keeps the dense scan", "[secret_scan]") {
  const auto t = tables_of("k/y&1x");
  CHECK(t->sparse_min == 6);
  CHECK(candidates(*t, "..k/y&1x..k%2Fy") == std::vector<uint32_t>{2, 10});
}
