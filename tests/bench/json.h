// Json: a small JSON value (null, bool, number, string, array, object with
// members in insertion order), a parser for the WAN emulator's stats file and
// a printer for the benchmark's results file.
//
// Thread safety: a plain value.

#ifndef NFSEDGE_TESTS_BENCH_JSON_H_
#define NFSEDGE_TESTS_BENCH_JSON_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "harness/status.h"

namespace nfsedge::bench {

class Json {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  Json() = default;
  Json(bool b) : type_(Type::kBool), bool_(b) {}        // NOLINT: implicit by design.
  Json(double n) : type_(Type::kNumber), number_(n) {}  // NOLINT
  Json(int n) : Json(static_cast<double>(n)) {}         // NOLINT
  Json(uint64_t n) : Json(static_cast<double>(n)) {}    // NOLINT
  Json(std::string s) : type_(Type::kString), string_(std::move(s)) {}  // NOLINT
  Json(const char* s) : Json(std::string(s)) {}                         // NOLINT
  static Json Array() { return Json(Type::kArray); }
  static Json Object() { return Json(Type::kObject); }

  Type type() const { return type_; }
  bool boolean() const { return bool_; }
  double number() const { return number_; }
  const std::string& str() const { return string_; }
  const std::vector<Json>& items() const { return items_; }
  const std::vector<std::pair<std::string, Json>>& members() const { return members_; }

  // Object: the member `key`, inserted (null) if missing. REQUIRES: object.
  Json& operator[](const std::string& key);
  // Object: the member `key`, or nullptr.
  const Json* Find(const std::string& key) const;
  // Returns Find(key)'s number, or `fallback` if missing or not a number.
  double NumberOr(const std::string& key, double fallback) const;
  // Array: appends. REQUIRES: array.
  void Push(Json value) { items_.push_back(std::move(value)); }

  // Compact iff indent == 0; else pretty with `indent` spaces.
  std::string Dump(int indent = 0) const;
  static harness::StatusOr<Json> Parse(const std::string& text);

 private:
  explicit Json(Type t) : type_(t) {}
  void DumpTo(std::string* out, int indent, int depth) const;

  Type type_ = Type::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_JSON_H_
