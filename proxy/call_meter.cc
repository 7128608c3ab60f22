#include "proxy/call_meter.h"

#include <algorithm>
#include <chrono>

#include "proxy/mount_service.h"
#include "proxy/nfs_procs.h"

namespace nfsedge {

namespace {

uint32_t Be32(std::string_view b, size_t at) {
  const auto* p = reinterpret_cast<const unsigned char*>(b.data() + at);
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

const char* NfsStatusName(uint32_t s) {
  switch (s) {
    case 0: return "ok";
    case 1: return "perm";
    case 2: return "noent";
    case 5: return "io";
    case 6: return "nxio";
    case 13: return "acces";
    case 17: return "exist";
    case 18: return "xdev";
    case 19: return "nodev";
    case 20: return "notdir";
    case 21: return "isdir";
    case 22: return "inval";
    case 27: return "fbig";
    case 28: return "nospc";
    case 30: return "rofs";
    case 31: return "mlink";
    case 63: return "nametoolong";
    case 66: return "notempty";
    case 69: return "dquot";
    case 70: return "stale";
    case 71: return "remote";
    case 10001: return "badhandle";
    case 10002: return "not_sync";
    case 10003: return "bad_cookie";
    case 10004: return "notsupp";
    case 10005: return "toosmall";
    case 10006: return "serverfault";
    case 10007: return "badtype";
    case 10008: return "jukebox";
    default: return "other";
  }
}

const char* AcceptName(AcceptStat s) {
  switch (s) {
    case kSuccess: return "ok";
    case kProgUnavail: return "prog_unavail";
    case kProgMismatch: return "prog_mismatch";
    case kProcUnavail: return "proc_unavail";
    case kGarbageArgs: return "garbage_args";
    case kSystemErr: return "system_err";
  }
  return "other";
}

constexpr const char* kMountProcNames[] = {"NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT"};

// Programs and procedures the proxy does not serve are counted under one
// key ("other"), so that clients sending made-up numbers cannot grow the
// meter and the metrics without bound.
constexpr uint32_t kOther = 0xffffffffu;

std::string ProgName(uint32_t prog) {
  if (prog == kNfsProgram) return "nfs";
  if (prog == kMountProgram) return "mount";
  return "other";
}

std::string ProcName(uint32_t prog, uint32_t proc) {
  if (prog == kNfsProgram) {
    if (const NfsProc* p = FindNfsProc(proc)) return p->name;
  } else if (prog == kMountProgram && proc < std::size(kMountProcNames)) {
    return kMountProcNames[proc];
  }
  return "other";
}

// (prog, proc) as counted: kOther for what ProgName/ProcName call "other".
std::pair<uint32_t, uint32_t> CountedAs(uint32_t prog, uint32_t proc) {
  if (prog != kNfsProgram && prog != kMountProgram) return {kOther, kOther};
  if (ProcName(prog, proc) == "other") return {prog, kOther};
  return {prog, proc};
}

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

std::string CallMeter::ResultOf(uint32_t prog, uint32_t proc, std::string_view reply) {
  StatusOr<ReplyHeader> h = ParseReply(reply);
  if (!h.ok()) return "malformed";
  if (h->reply_stat == kMsgDenied) return h->reject_stat == kAuthError ? "auth_error" : "denied";
  if (h->accept_stat != kSuccess) return AcceptName(h->accept_stat);
  std::string_view results = reply.substr(h->results_offset);
  // Every NFSv3 procedure but NULL, and MOUNT's MNT, start with a status.
  bool has_status = (prog == kNfsProgram && proc != 0) || (prog == kMountProgram && proc == 1);
  if (!has_status) return "ok";
  if (results.size() < 4) return "malformed";
  uint32_t s = Be32(results, 0);
  if (prog == kMountProgram) return s == 0 ? "ok" : NfsStatusName(s);  // mountstat3 shares values
  return NfsStatusName(s);
}

void CallMeter::Side::Observe(uint32_t prog_in, uint32_t proc_in, std::string result,
                              Duration elapsed) {
  const auto [prog, proc] = CountedAs(prog_in, proc_in);
  calls[Key{prog, proc, std::move(result)}]++;
  auto it = latency.find({prog, proc});
  if (it == latency.end()) {
    it = latency.emplace(std::make_pair(prog, proc), Histogram(Histogram::LatencyBounds())).first;
  }
  it->second.Observe(Seconds(elapsed));
}

void CallMeter::Side::Collect(MetricsWriter& w, const char* side, const char* calls_help,
                              const char* latency_help) const {
  const std::string calls_name = std::string("nfsedge_") + side + "_calls_total";
  const std::string latency_name = std::string("nfsedge_") + side + "_latency_seconds";
  for (const auto& [key, n] : calls) {
    const auto& [prog, proc, result] = key;
    w.Counter(calls_name, calls_help,
              {{"program", ProgName(prog)}, {"proc", ProcName(prog, proc)}, {"result", result}},
              static_cast<double>(n));
  }
  for (const auto& [key, h] : latency) {
    w.Hist(latency_name, latency_help,
           {{"program", ProgName(key.first)}, {"proc", ProcName(key.first, key.second)}}, h);
  }
}

void CallMeter::ObserveClient(const CallHeader& h, std::string_view args, std::string_view reply,
                              Duration elapsed) {
  client_.Observe(h.prog, h.proc, ResultOf(h.prog, h.proc, reply), elapsed);
  if (h.prog == kNfsProgram && (h.proc == 6 || h.proc == 7)) CountFileBytes(h.proc, args);
}

void CallMeter::CountFileBytes(uint32_t proc, std::string_view args) {
  // READ3args and WRITE3args both start: nfs_fh3 (opaque<64>), offset3, count3.
  if (args.size() < 4) return;
  uint32_t len = Be32(args, 0);
  size_t padded = (static_cast<size_t>(len) + 3) & ~size_t{3};
  if (len > 64 || args.size() < 4 + padded + 12) return;
  uint32_t count = Be32(args, 4 + padded + 8);
  std::string fh(args.substr(4, len));
  auto it = files_.find(fh);
  if (it == files_.end()) {
    if (files_.size() >= max_files_) {
      // Forget the quieter half: what remains are the files worth showing.
      std::vector<std::pair<uint64_t, std::string>> all;
      for (const auto& [k, f] : files_) all.emplace_back(f.read_bytes + f.write_bytes, k);
      std::nth_element(all.begin(), all.begin() + all.size() / 2, all.end());
      for (size_t i = 0; i < all.size() / 2; ++i) files_.erase(all[i].second);
    }
    it = files_.emplace(fh, FileTraffic{fh, 0, 0}).first;
  }
  if (proc == 6) {
    it->second.read_bytes += count;
    read_bytes_ += count;
  } else {
    it->second.write_bytes += count;
    write_bytes_ += count;
  }
}

void CallMeter::ObserveUpstream(uint32_t prog, uint32_t proc, const StatusOr<RpcReply>& reply,
                                Duration elapsed) {
  std::string result;
  if (reply.ok()) {
    result = ResultOf(prog, proc, reply->record);
  } else if (reply.status().code() == StatusCode::kTimeout) {
    result = "timeout";
  } else if (reply.status().code() == StatusCode::kUnavailable ||
             reply.status().code() == StatusCode::kCancelled) {
    result = "unavailable";
  } else {
    result = "error";
  }
  upstream_.Observe(prog, proc, std::move(result), elapsed);
}

std::vector<FileTraffic> CallMeter::TopFiles(size_t n) const {
  std::vector<FileTraffic> all;
  all.reserve(files_.size());
  for (const auto& [k, f] : files_) all.push_back(f);
  auto busier = [](const FileTraffic& a, const FileTraffic& b) {
    return a.read_bytes + a.write_bytes > b.read_bytes + b.write_bytes;
  };
  n = std::min(n, all.size());
  std::partial_sort(all.begin(), all.begin() + n, all.end(), busier);
  all.resize(n);
  return all;
}

uint64_t CallMeter::UpstreamCalls(std::string_view result) const {
  uint64_t n = 0;
  for (const auto& [key, count] : upstream_.calls) {
    if (std::get<2>(key) == result) n += count;
  }
  return n;
}

void CallMeter::Collect(MetricsWriter& w) const {
  client_.Collect(w, "client", "Calls answered to clients, by program, procedure and result.",
                  "Time from a client call's arrival to its reply.");
  upstream_.Collect(w, "upstream",
                    "Calls sent to the upstream server across the WAN, by program, procedure "
                    "and result.",
                    "Time from sending an upstream call to its reply (WAN round trip included).");
  const char* help = "Bytes clients asked to READ and WRITE (arguments' count).";
  w.Counter("nfsedge_client_bytes_total", help, {{"op", "read"}},
            static_cast<double>(read_bytes_));
  w.Counter("nfsedge_client_bytes_total", help, {{"op", "write"}},
            static_cast<double>(write_bytes_));
}

}  // namespace nfsedge
