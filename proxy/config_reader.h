// TableReader: typed reads of one TOML table with bounds, collecting
// "file:line: reason" messages, and a final check for unknown keys.
//
// Thread-safety: not synchronized; one reader per table being parsed.
#ifndef NFSEDGE_PROXY_CONFIG_READER_H_
#define NFSEDGE_PROXY_CONFIG_READER_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <toml++/toml.h>

namespace nfsedge {

// The keys each table accepts, by table name ("server", "export"; "" for
// the top level). While a KeyCatalogScope is alive on a thread, every
// TableReader on that thread records the keys it was asked for into the
// scope's catalog when it is destroyed: ConfigKeys() lists the keys the
// parser accepts this way, so the list cannot drift from the code.
using KeyCatalog = std::map<std::string, std::set<std::string>>;

class KeyCatalogScope {
 public:
  explicit KeyCatalogScope(KeyCatalog* catalog);
  ~KeyCatalogScope();
  KeyCatalogScope(const KeyCatalogScope&) = delete;
  KeyCatalogScope& operator=(const KeyCatalogScope&) = delete;
  // The catalog of the innermost scope on this thread, or null.
  static KeyCatalog* Current();

 private:
  KeyCatalog* previous_;
};

class TableReader {
 public:
  // `where` names the table in messages ("[server]", "[[export]] #2").
  TableReader(const toml::table& table, std::string source, std::string where,
              std::vector<std::string>* errors);
  ~TableReader();
  TableReader(const TableReader&) = delete;
  TableReader& operator=(const TableReader&) = delete;

  // Each reads `key` if present (leaving `*out` at its default otherwise).
  // A present key of the wrong type or out of [min, max] adds an error.
  void Uint(const char* key, uint64_t min, uint64_t max, uint32_t* out);
  // A byte count: an integer, or a string with a binary suffix K, M, G or T
  // ("64K", "1G").
  void Bytes(const char* key, uint64_t min, uint64_t max, uint64_t* out);
  void Port(const char* key, bool allow_zero, uint16_t* out);
  void String(const char* key, std::string* out);
  void Bool(const char* key, bool* out);
  void StringArray(const char* key, std::vector<std::string>* out);
  // Returns true iff `key` is present.
  bool Has(const char* key) const;
  // Adds an error about `key` (or the table when key is null).
  void Error(const char* key, const std::string& reason);
  // Adds an error for every key that no read above asked for.
  void RejectUnknownKeys();

 private:
  std::string Where(const toml::source_region& at) const;
  const toml::node* Get(const char* key);

  const toml::table& table_;
  std::string source_;
  std::string where_;
  std::vector<std::string>* errors_;
  std::set<std::string> known_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_CONFIG_READER_H_
