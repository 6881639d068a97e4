// The replay's Logpush reader (worker/cli/replay/formats/logpush-batch.js): over a batch of log lines,
// each line's verdict and, for a line that is a request, where the fields a record is made of lie, so
// that JavaScript makes strings of those few bytes only instead of JSON.parse'ing the whole line into
// an object of a dozen properties.
//
// A line is one of:
//   - kBlank: only ASCII white space as String.prototype.trim knows it (tab, LF, VT, FF, CR, space);
//   - kNotObject: its first byte after JSON's white space is not "{" (JSON or not, it is no request);
//   - kNotJson: an object that JSON.parse refuses (RFC 8259's grammar on ASCII text: numbers,
//     literals, escapes, nesting, white space, bytes after the value);
//   - kNoRecord: an object JSON.parse accepts whose fields make no request (no address, no method
//     of [A-Z]{1,16}, no URI beginning with "/", a timestamp neither a number nor a string);
//   - kRecord: a request; its spans are written;
//   - kFallback: anything this reader does not answer for exactly, read by JSON.parse instead: a byte
//     above 0x7F (UTF-8 to decode), an escape in a top-level key or in a value the record takes,
//     request headers whose names collide ignoring case, start with a digit or are more than
//     kLogpushMaxHeaders, a field that makes request.cf (ClientCountry, ClientASN, EdgeColoCode,
//     ClientRegionCode, BotScore, VerifiedBot, JA3Hash, JA4), nesting deeper than 64.
// Duplicate keys need no fallback: as in JSON.parse, the last one counts.
// Nothing here allocates.
#ifndef SLUICE_LOGPUSH_SCAN_HPP
#define SLUICE_LOGPUSH_SCAN_HPP

#include <cstddef>
#include <cstdint>

namespace sluice {

enum class LogpushLine : int32_t {
  kBlank = 0,
  kNotObject = 1,
  kNotJson = 2,
  kNoRecord = 3,
  kFallback = 4,
  kRecord = 5,
};

// The request headers (RequestHeaders) of one record this reader takes at most.
constexpr uint32_t kLogpushMaxHeaders = 16;

// One line's verdict and, for kRecord, its fields as byte offsets into the batch ([start, end) between
// a string's quotes). Written for every line; the spans only for kRecord.
struct LogpushSpans {
  int32_t kind;                      // a LogpushLine
  int32_t ip_start, ip_end;          // ClientIP, a non-empty string
  int32_t host_start, host_end;      // ClientRequestHost, or -1, -1 when it is not a string
  int32_t method_start, method_end;  // ClientRequestMethod, [A-Z]{1,16}
  int32_t uri_start, uri_end;        // ClientRequestURI when a string, else ClientRequestPath; begins with "/"
  int32_t time_start, time_end;      // EdgeStartTimestamp's bytes unless time_form is kLogpushNumber
  int32_t time_form;                 // kLogpushNumber, kLogpushString or kLogpushNumberText
  int32_t status_start, status_end;  // EdgeResponseStatus's bytes when a number `status` does not hold, else -1
  int32_t header_first;              // the record's string-valued request headers: headers[first, first + count)
  int32_t header_count;
  // The strings' ids in LogpushStrings (0: none, make the string of its bytes), when scanned with one.
  int32_t ip_id, host_id, method_id, uri_id;
  double time;    // EdgeStartTimestamp as JSON.parse reads it, when time_form is kLogpushNumber
  double status;  // EdgeResponseStatus when JSON.parse makes an integer of it, else 0 (-0 stays -0)
};
static_assert(sizeof(LogpushSpans) == 96);
static_assert(offsetof(LogpushSpans, ip_id) == 64);
static_assert(offsetof(LogpushSpans, time) == 80);

// How EdgeStartTimestamp is given: the double in `time` (a number whose conversion needs one correctly
// rounded operation), a string (its bytes), or a number whose bytes JavaScript's Number() reads (the
// same correctly rounded double JSON.parse makes; the core carries no strtod).
constexpr int32_t kLogpushNumber = 0;
constexpr int32_t kLogpushString = 1;
constexpr int32_t kLogpushNumberText = 2;

// One request header: its name (not lower-cased) and its value, as offsets into the batch, and their
// ids in LogpushStrings (0: none).
struct LogpushHeader {
  int32_t name_start, name_end, value_start, value_end;
  int32_t name_id, value_id;
};
static_assert(sizeof(LogpushHeader) == 24);

// A string a batch put into LogpushStrings: slot `slot` (its id less 1) now holds bytes [start, end)
// of the batch. The reader makes the string once, and every record that has it takes the same one.
struct LogpushFresh {
  int32_t slot, start, end;
};
static_assert(sizeof(LogpushFresh) == 12);

// The strings records repeat (addresses, hosts, methods, paths, header names and values), remembered
// across batches so that JavaScript makes each once: a table of kSlots slots indexed by a hash of the
// bytes, each holding one string of at most kMaxBytes bytes (longer ones are never kept). A string
// whose slot holds another is put in its place, unless that one was put there or found there in the
// same batch (records of the batch name it, and JavaScript learns of the batch's new strings only
// when the batch is done): then it is not kept. Caller-allocated, zeroed.
struct LogpushStrings {
  static constexpr uint32_t kSlots = 1u << 12;
  static constexpr uint32_t kMaxBytes = 56;
  struct Slot {
    uint32_t batch;  // the batch that put it there, 0 for none
    uint32_t length;
    uint8_t bytes[kMaxBytes];
  };
  uint32_t batch;  // the current batch, from 1
  uint32_t reserved;
  Slot slots[kSlots];
};
static_assert(sizeof(LogpushStrings::Slot) == 64);

// Where a batch's new strings go: at most `capacity`; `count` of them written.
struct LogpushFreshList {
  LogpushFresh* items;
  uint32_t capacity;
  uint32_t count;
};

// Reads line i = bytes[starts[i], ends[i]) for i < count into out[i]. The headers of the records go to
// `headers` in line order, at most `header_capacity` in all (a record whose headers do not fit is a
// kFallback). With `strings`, the records' strings get their ids, and the strings the batch put there
// are listed in `fresh`. Returns how many headers were written.
uint32_t scan_logpush_lines(const uint8_t* bytes, const int32_t* starts, const int32_t* ends, uint32_t count,
                            LogpushSpans* out, LogpushHeader* headers, uint32_t header_capacity,
                            LogpushStrings* strings = nullptr, LogpushFreshList* fresh = nullptr);

// The id of bytes [start, end) in `strings` (1 + its slot), 0 when not kept; a string put there is
// added to `fresh` (and not put there when `fresh` is full).
int32_t intern_logpush_string(LogpushStrings& strings, LogpushFreshList& fresh, const uint8_t* bytes, int32_t start,
                              int32_t end);

// One line, bytes[start, end); its headers go to headers[0, header_capacity).
LogpushLine scan_logpush_line(const uint8_t* bytes, int32_t start, int32_t end, LogpushSpans& out, LogpushHeader* headers,
                              uint32_t header_capacity);

}  // namespace sluice

#endif
