#include "proxy/config_reader.h"

#include <cctype>
#include <cstdint>
#include <optional>

namespace nfsedge {

TableReader::TableReader(const toml::table& table, std::string source, std::string where,
                         std::vector<std::string>* errors)
    : table_(table), source_(std::move(source)), where_(std::move(where)), errors_(errors) {}

namespace {
thread_local KeyCatalog* t_catalog = nullptr;
}  // namespace

KeyCatalogScope::KeyCatalogScope(KeyCatalog* catalog) : previous_(t_catalog) {
  t_catalog = catalog;
}
KeyCatalogScope::~KeyCatalogScope() { t_catalog = previous_; }
KeyCatalog* KeyCatalogScope::Current() { return t_catalog; }

TableReader::~TableReader() {
  if (!t_catalog) return;
  // "[server]" -> "server", "[[export]] #2" -> "export", "top level" -> "".
  std::string name;
  if (!where_.empty() && where_[0] == '[') {
    size_t start = where_.find_first_not_of('[');
    name = where_.substr(start, where_.find(']') - start);
  }
  (*t_catalog)[name].insert(known_.begin(), known_.end());
}

std::string TableReader::Where(const toml::source_region& at) const {
  return source_ + ":" + std::to_string(at.begin.line) + ": ";
}

const toml::node* TableReader::Get(const char* key) {
  known_.insert(key);
  return table_.get(key);
}

bool TableReader::Has(const char* key) const { return table_.contains(key); }

void TableReader::Error(const char* key, const std::string& reason) {
  const toml::node* n = key ? table_.get(key) : nullptr;
  std::string prefix = Where(n ? n->source() : table_.source());
  errors_->push_back(prefix + where_ + (key ? std::string(" ") + key : std::string()) + ": " +
                     reason);
}

void TableReader::Uint(const char* key, uint64_t min, uint64_t max, uint32_t* out) {
  const toml::node* n = Get(key);
  if (!n) return;
  // is_integer() first: toml++ converts a float to int64 unchecked.
  std::optional<int64_t> v = n->is_integer() ? n->value<int64_t>() : std::nullopt;
  if (!v) {
    Error(key, "must be an integer");
  } else if (*v < 0 || static_cast<uint64_t>(*v) < min || static_cast<uint64_t>(*v) > max) {
    Error(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                   " (got " + std::to_string(*v) + ")");
  } else {
    *out = static_cast<uint32_t>(*v);
  }
}

namespace {

std::string ByteCount(uint64_t v) {
  static const char* kSuffix[] = {"", "K", "M", "G", "T"};
  int i = 0;
  while (i < 4 && v != 0 && v % 1024 == 0) {
    v /= 1024;
    ++i;
  }
  return std::to_string(v) + kSuffix[i];
}

// Returns the bytes `text` ("123", "64K", "1G") stands for, if it is one.
std::optional<uint64_t> ParseByteCount(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 15 || text.size() > digits + 1) return std::nullopt;
  uint64_t v = std::stoull(text.substr(0, digits));
  if (digits == text.size()) return v;
  const std::string units = "KMGT";
  size_t u = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(text.back()))));
  if (u == std::string::npos) return std::nullopt;
  for (size_t i = 0; i <= u; ++i) {
    if (v > (UINT64_MAX >> 10)) return std::nullopt;
    v <<= 10;
  }
  return v;
}

}  // namespace

void TableReader::Bytes(const char* key, uint64_t min, uint64_t max, uint64_t* out) {
  const toml::node* n = Get(key);
  if (!n) return;
  std::optional<uint64_t> v;
  if (n->is_integer() && *n->value<int64_t>() >= 0) {
    v = static_cast<uint64_t>(*n->value<int64_t>());
  } else if (n->is_string()) {
    v = ParseByteCount(*n->value<std::string>());
  }
  if (!v) {
    Error(key, "must be a byte count: an integer, or a string such as \"64K\", \"512M\", \"2G\"");
  } else if (*v < min || *v > max) {
    Error(key, "must be between " + ByteCount(min) + " and " + ByteCount(max) + " (got " +
                   ByteCount(*v) + ")");
  } else {
    *out = *v;
  }
}

void TableReader::Port(const char* key, bool allow_zero, uint16_t* out) {
  uint32_t v = *out;
  Uint(key, allow_zero ? 0 : 1, 65535, &v);
  *out = static_cast<uint16_t>(v);
}

void TableReader::String(const char* key, std::string* out) {
  const toml::node* n = Get(key);
  if (!n) return;
  if (!n->is_string()) {
    Error(key, "must be a string");
    return;
  }
  *out = *n->value<std::string>();
}

void TableReader::Bool(const char* key, bool* out) {
  const toml::node* n = Get(key);
  if (!n) return;
  if (!n->is_boolean()) {
    Error(key, "must be true or false");
    return;
  }
  *out = *n->value<bool>();
}

void TableReader::StringArray(const char* key, std::vector<std::string>* out) {
  const toml::node* n = Get(key);
  if (!n) return;
  const toml::array* a = n->as_array();
  if (!a) {
    Error(key, "must be an array of strings");
    return;
  }
  out->clear();
  for (const toml::node& e : *a) {
    if (!e.is_string()) {
      Error(key, "must be an array of strings");
      return;
    }
    out->push_back(*e.value<std::string>());
  }
}

void TableReader::RejectUnknownKeys() {
  for (const auto& [k, v] : table_) {
    std::string key(k.str());
    if (known_.count(key)) continue;
    errors_->push_back(Where(k.source()) + where_ + ": unknown key '" + key + "'");
  }
}

}  // namespace nfsedge
