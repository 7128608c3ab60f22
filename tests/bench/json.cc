#include "json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace nfsedge::bench {
namespace {

void Quote(const std::string& s, std::string* out) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  harness::StatusOr<Json> Document() {
    Json v;
    if (!Value(&v, 0)) return harness::Status::Error("bad JSON at offset " + std::to_string(pos_));
    Space();
    if (pos_ != s_.size()) return harness::Status::Error("trailing data after JSON");
    return v;
  }

 private:
  void Space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    Space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Word(const char* w) {
    size_t n = std::char_traits<char>::length(w);
    if (s_.compare(pos_, n, w) != 0) return false;
    pos_ += n;
    return true;
  }
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) return false;
      char e = s_[pos_++];
      if (e == 'n')
        out->push_back('\n');
      else if (e == 't')
        out->push_back('\t');
      else if (e == 'r')
        out->push_back('\r');
      else if (e == 'b')
        out->push_back('\b');
      else if (e == 'f')
        out->push_back('\f');
      else if (e == 'u') {
        if (pos_ + 4 > s_.size()) return false;
        unsigned code = std::strtoul(s_.substr(pos_, 4).c_str(), nullptr, 16);
        pos_ += 4;
        out->push_back(code < 0x80 ? static_cast<char>(code) : '?');
      } else {
        out->push_back(e);
      }
    }
    return Eat('"');
  }
  bool Value(Json* v, int depth) {
    if (depth > 64) return false;
    Space();
    if (pos_ >= s_.size()) return false;
    char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      *v = Json::Object();
      if (Eat('}')) return true;
      do {
        std::string key;
        if (!String(&key) || !Eat(':') || !Value(&(*v)[key], depth + 1)) return false;
      } while (Eat(','));
      return Eat('}');
    }
    if (c == '[') {
      ++pos_;
      *v = Json::Array();
      if (Eat(']')) return true;
      do {
        Json item;
        if (!Value(&item, depth + 1)) return false;
        v->Push(std::move(item));
      } while (Eat(','));
      return Eat(']');
    }
    if (c == '"') {
      std::string s;
      if (!String(&s)) return false;
      *v = Json(std::move(s));
      return true;
    }
    if (Word("true")) {
      *v = Json(true);
      return true;
    }
    if (Word("false")) {
      *v = Json(false);
      return true;
    }
    if (Word("null")) {
      *v = Json();
      return true;
    }
    const char* start = s_.c_str() + pos_;
    char* end = nullptr;
    double d = std::strtod(start, &end);
    if (end == start) return false;
    pos_ += end - start;
    *v = Json(d);
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

Json& Json::operator[](const std::string& key) {
  for (auto& [k, v] : members_) {
    if (k == key) return v;
  }
  members_.emplace_back(key, Json());
  return members_.back().second;
}

const Json* Json::Find(const std::string& key) const {
  for (const auto& [k, v] : members_) {
    if (k == key) return &v;
  }
  return nullptr;
}

double Json::NumberOr(const std::string& key, double fallback) const {
  const Json* v = Find(key);
  return v && v->type() == Type::kNumber ? v->number() : fallback;
}

std::string Json::Dump(int indent) const {
  std::string out;
  DumpTo(&out, indent, 0);
  return out;
}

void Json::DumpTo(std::string* out, int indent, int depth) const {
  auto newline = [&](int d) {
    if (indent == 0) return;
    out->push_back('\n');
    out->append(static_cast<size_t>(indent * d), ' ');
  };
  switch (type_) {
    case Type::kNull:
      *out += "null";
      return;
    case Type::kBool:
      *out += bool_ ? "true" : "false";
      return;
    case Type::kNumber: {
      char buf[32];
      if (std::isfinite(number_) && number_ == std::floor(number_) && std::fabs(number_) < 1e15) {
        std::snprintf(buf, sizeof(buf), "%.0f", number_);
      } else if (std::isfinite(number_)) {
        std::snprintf(buf, sizeof(buf), "%.6g", number_);
      } else {
        std::snprintf(buf, sizeof(buf), "null");
      }
      *out += buf;
      return;
    }
    case Type::kString:
      Quote(string_, out);
      return;
    case Type::kArray: {
      // An array of numbers only (a point of a series) stays on one line.
      const bool flat = std::all_of(items_.begin(), items_.end(),
                                    [](const Json& j) { return j.type_ == Type::kNumber; });
      out->push_back('[');
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out->push_back(',');
        if (!flat) newline(depth + 1);
        items_[i].DumpTo(out, flat ? 0 : indent, depth + 1);
      }
      if (!items_.empty() && !flat) newline(depth);
      out->push_back(']');
      return;
    }
    case Type::kObject:
      out->push_back('{');
      for (size_t i = 0; i < members_.size(); ++i) {
        if (i) out->push_back(',');
        newline(depth + 1);
        Quote(members_[i].first, out);
        *out += indent ? ": " : ":";
        members_[i].second.DumpTo(out, indent, depth + 1);
      }
      if (!members_.empty()) newline(depth);
      out->push_back('}');
      return;
  }
}

harness::StatusOr<Json> Json::Parse(const std::string& text) { return Parser(text).Document(); }

}  // namespace nfsedge::bench
