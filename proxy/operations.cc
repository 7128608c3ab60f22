#include "proxy/operations.h"

#include <rpc/xdr/mount3.h>

#include <chrono>
#include <cstdio>

#include "proxy/client_paths.h"
#include "proxy/mount_service.h"
#include "proxy/nfs_procs.h"
#include "rpc/auth_sys.h"
#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {

std::string Mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// Splits "/a/b/c" below `prefix` ("/a") into {"b", "c"}.
std::vector<std::string> ComponentsBelow(const std::string& path, const std::string& prefix) {
  std::vector<std::string> out;
  std::string rest = path.size() > prefix.size() ? path.substr(prefix.size()) : "";
  size_t i = 0;
  while (i < rest.size()) {
    size_t j = rest.find('/', i);
    if (j == std::string::npos) j = rest.size();
    if (j > i) out.push_back(rest.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace

// One `nfsedge warm` in progress: a Prefetcher of its own, so that the
// tree is walked whatever the client-driven prefetch has seen.
struct Operations::Warm {
  std::unique_ptr<Prefetcher> prefetcher;
  std::shared_ptr<ControlReply> reply;
  SteadyClock::time_point start;
};

Operations::Operations(OperationsDeps deps)
    : deps_(std::move(deps)), warm_timer_(deps_.base, [this] { PollWarms(); }) {}

Operations::~Operations() = default;

void Operations::Handle(const std::string& command, const std::string& argument,
                        std::shared_ptr<ControlReply> reply) {
  if (command == "status" && argument.empty()) {
    Status_(std::move(reply));
  } else if (command == "drop-cache") {
    DropCache(argument, std::move(reply));
  } else if (command == "flush" && argument.empty()) {
    Flush(std::move(reply));
  } else if (command == "warm" && !argument.empty()) {
    StartWarm(argument, std::move(reply));
  } else if (command == "reload" && argument.empty()) {
    ReloadOutcome outcome;
    Status s = deps_.reload(&outcome);
    if (s.ok()) {
      reply->Line("config reloaded from " + deps_.config->source);
      for (const std::string& k : outcome.applied) reply->Line("applied: " + k);
      for (const std::string& k : outcome.restart) {
        reply->Line("needs a restart (the value in force stays): " + k);
      }
    }
    reply->Finish(s);
  } else {
    reply->Finish(InvalidArgument("unknown command or bad arguments: '" + command +
                                  (argument.empty() ? "" : " " + argument) +
                                  "' (status, drop-cache [PATH], flush, warm PATH, reload)"));
  }
}

void Operations::Status_(std::shared_ptr<ControlReply> reply) {
  // A NULL call measures the round trip to the upstream now, through the
  // same connections (and queue) as clients' calls; an upstream that does
  // not answer within kStatusWait is reported as not reachable.
  constexpr auto kStatusWait = std::chrono::seconds(5);
  struct Pending {
    bool answered = false;
    std::unique_ptr<Timer> timer;
  };
  auto pending = std::make_shared<Pending>();
  // The timer's callback holds `pending` through `report` until the NULL
  // call's callback (which always runs) drops the timer.
  auto report = [this, reply, pending](const std::string& upstream, bool from_timer) {
    if (!from_timer) pending->timer.reset();
    if (pending->answered) return;
    pending->answered = true;
    const Config& c = *deps_.config;
    // Per lane: each has `upstream.connections` and its own limits.
    auto lane = [&c](const char* name, const RpcClient& l) {
      return std::string(name) + " connections up " + std::to_string(l.connections_up()) + "/" +
             std::to_string(c.upstream.connections) + ", calls in flight " +
             std::to_string(l.in_flight()) + ", queued " + std::to_string(l.queued());
    };
    std::string lanes = lane("metadata", *deps_.nfs_client);
    if (deps_.nfs_bulk_client != nullptr) lanes += "; " + lane("bulk", *deps_.nfs_bulk_client);
    reply->Line("upstream " + c.upstream.host + ": " + upstream + ", " + lanes);
    reply->Line("metadata cache: attributes " + std::to_string(deps_.meta->attrs().size()) + "/" +
                std::to_string(c.cache.max_attr_entries) + ", access " +
                std::to_string(deps_.meta->access().size()) + "/" +
                std::to_string(c.cache.max_access_entries) + ", names " +
                std::to_string(deps_.meta->names().size()) + "/" +
                std::to_string(c.cache.max_name_entries));
    if (deps_.blocks) {
      std::string line = "data cache: memory " + Mib(deps_.blocks->stats().bytes) + " of " +
                         Mib(c.cache.memory_bytes);
      if (deps_.disk) {
        line += ", disk " + Mib(deps_.disk->stats().bytes) + " of " + Mib(c.cache.disk_bytes) +
                " in " + c.cache.disk_dir;
      }
      reply->Line(line);
    } else {
      reply->Line("data cache: off");
    }
    std::vector<FileTraffic> top = deps_.meter->TopFiles(10);
    reply->Line(top.empty() ? "top files by traffic: none yet"
                            : "top files by traffic (read, written, path or handle):");
    std::vector<std::string> handles;
    for (const FileTraffic& f : top) handles.push_back(f.fh);
    const std::vector<std::string> paths =
        ClientPaths(handles, *deps_.meta, *deps_.handles, *deps_.exports);
    for (size_t i = 0; i < top.size(); ++i) {
      reply->Line("  " + Mib(top[i].read_bytes) + "  " + Mib(top[i].write_bytes) + "  " +
                  paths[i]);
    }
    reply->Finish(Status::Ok());
  };
  auto start = SteadyClock::now();
  Status s = deps_.nfs->Call(kNfsProgram, kNfsVersion, 0, OpaqueAuth{}, "",
                             [report, start](StatusOr<RpcReply> r) {
                               char rtt[64];
                               std::snprintf(rtt, sizeof(rtt), "%.1f ms",
                                             std::chrono::duration<double, std::milli>(
                                                 SteadyClock::now() - start)
                                                 .count());
                               report(Succeeded(r) ? std::string("reachable, round trip ") + rtt
                                                   : "NOT reachable (" +
                                                         (r.ok() ? std::string("call refused")
                                                                 : r.status().ToString()) +
                                                         ")",
                                      false);
                             });
  if (!s.ok()) {
    report("NOT reachable (" + s.ToString() + ")", false);
    return;
  }
  pending->timer = std::make_unique<Timer>(deps_.base, [report] {
    report("NOT reachable (no reply to a NULL call within 5 s)", true);
  });
  pending->timer->Arm(kStatusWait);
}

void Operations::DropCache(const std::string& path, std::shared_ptr<ControlReply> reply) {
  if (path.empty()) {
    const size_t attrs = deps_.meta->attrs().size();
    const uint64_t bytes = deps_.blocks ? deps_.blocks->stats().bytes : 0;
    deps_.meta->Clear();
    if (deps_.blocks) deps_.blocks->DropAll();
    if (deps_.disk) deps_.disk->DropAll();
    // READs on their way do not bring the dropped bytes back.
    if (deps_.read_path) deps_.read_path->NoteDropAll();
    reply->Line("dropped all cached metadata (" + std::to_string(attrs) +
                " attribute entries) and data (" + Mib(bytes) + " in memory" +
                (deps_.disk ? ", and the disk tier" : "") + ")");
    reply->Finish(Status::Ok());
    return;
  }
  // The object and its directory: a name created or removed at the head
  // office is a change of the directory (its cached names and attributes).
  Resolve(
      path,
      [this, path, reply](StatusOr<Resolved> r) {
        if (!r.ok()) {
          reply->Finish(r.status());
          return;
        }
        auto drop = [this](const std::string& fh) {
          deps_.meta->ForgetWithAccess(fh);
          if (deps_.blocks) deps_.blocks->DropFile(fh);
          if (deps_.disk) deps_.disk->DropFile(fh);
          if (deps_.read_path) deps_.read_path->NoteWrite(fh);
        };
        if (r->fh.empty()) {
          // What the proxy knew by that name (removed at the head office)
          // goes too.
          diropargs3 d{};
          d.dir = FhView(r->parent);
          std::string name = path.substr(path.rfind('/') + 1);
          d.name = name.data();
          const std::string known = deps_.meta->KnownChild(d);
          if (!known.empty()) drop(known);
          deps_.meta->ForgetWithAccess(r->parent);
          reply->Line(path + " is not there upstream: dropped what is cached about it and its "
                      "directory");
          reply->Finish(Status::Ok());
          return;
        }
        if (!r->parent.empty()) deps_.meta->ForgetWithAccess(r->parent);
        drop(r->fh);
        reply->Line("dropped what is cached about " + path +
                    (r->parent.empty() ? std::string() : " and its directory"));
        reply->Finish(Status::Ok());
      },
      /*missing_ok=*/true);
}

void Operations::Flush(std::shared_ptr<ControlReply> reply) {
  if (!flush_) {
    reply->Line(
        "nothing buffered: every write is answered only after the upstream has it (no "
        "write-behind in this build)");
    reply->Finish(Status::Ok());
    return;
  }
  flush_([reply](const Status& s, const std::string& report) {
    if (!report.empty()) reply->Line(report);
    reply->Finish(s);
  });
}

void Operations::Resolve(const std::string& path, ResolveDone done, bool missing_ok) {
  std::string upstream_path;
  const Export* exp =
      IsCleanAbsolutePath(path) ? deps_.exports->FindByPath(path, &upstream_path) : nullptr;
  if (!exp) {
    done(InvalidArgument("'" + path + "' is not an exported path or below one"));
    return;
  }
  Resolved r;
  r.exp = exp;
  OpaqueAuth root;
  root.flavor = kAuthSys;
  AuthSys sys;
  sys.machine = "nfsedge";
  root.body = EncodeAuthSys(sys);
  r.cred = exp->MapCredential(root);
  auto names =
      std::make_shared<std::vector<std::string>>(ComponentsBelow(path, exp->config().path));
  std::string args;
  std::string up = exp->config().upstream_path;
  char* p = up.data();
  if (!XdrEncode(reinterpret_cast<xdrproc_t>(xdr_dirpath), &p, &args)) {
    done(InvalidArgument("upstream path too long"));
    return;
  }
  Status s = deps_.mount->Call(
      kMountProgram, kMountVersion, 1 /* MNT */, r.cred, args,
      [this, r, names, done, up, missing_ok](StatusOr<RpcReply> reply) mutable {
        if (!Succeeded(reply)) {
          done(Status(StatusCode::kUnavailable, "upstream MNT " + up + " failed"));
          return;
        }
        XdrValue<mountres3> res(reinterpret_cast<xdrproc_t>(xdr_mountres3));
        if (!res.Decode(reply->results()) || res->fhs_status != MNT3_OK) {
          done(Status(StatusCode::kNotFound, "upstream refused MNT " + up));
          return;
        }
        const fhandle3& fh = res->mountres3_u.mountinfo.fhandle;
        r.fh.assign(fh.fhandle3_val, fh.fhandle3_len);
        // The export's own root, marked as a MNT marks it: a warm after a
        // restart (no handle store) hands its tree out again, and a client
        // still holding the root's handle must not step above it by "..".
        deps_.handles->Add(r.fh, r.exp->id(), /*root=*/true);
        LookupNext(names, 0, std::move(r), std::move(done), missing_ok);
      });
  if (!s.ok()) done(s);
}

void Operations::LookupNext(std::shared_ptr<std::vector<std::string>> names, size_t i,
                            Resolved r, ResolveDone done, bool missing_ok) {
  if (i == names->size()) {
    done(std::move(r));
    return;
  }
  LOOKUP3args a{};
  a.what.dir = FhView(r.fh);
  a.what.name = const_cast<char*>((*names)[i].c_str());
  std::string wire;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3args), &a, &wire);
  Status s = deps_.nfs->Call(
      kNfsProgram, kNfsVersion, NFSPROC3_LOOKUP, r.cred, wire,
      [this, names, i, r, done, missing_ok](StatusOr<RpcReply> reply) mutable {
        XdrValue<LOOKUP3res> res(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3res));
        if (!Succeeded(reply) || !res.Decode(reply->results())) {
          done(Status(StatusCode::kUnavailable, "upstream LOOKUP of '" + (*names)[i] + "' failed"));
          return;
        }
        if (res->status == NFS3ERR_NOENT && missing_ok && i + 1 == names->size()) {
          r.parent = r.fh;
          r.fh.clear();
          done(std::move(r));
          return;
        }
        if (res->status != NFS3_OK) {
          done(Status(StatusCode::kNotFound, "'" + (*names)[i] + "': " +
                                                 CallMeter::ResultOf(kNfsProgram, NFSPROC3_LOOKUP,
                                                                     reply->record)));
          return;
        }
        const nfs_fh3& fh = res->LOOKUP3res_u.resok.object;
        r.parent = r.fh;
        r.fh.assign(fh.data.data_val, fh.data.data_len);
        LookupNext(names, i + 1, std::move(r), std::move(done), missing_ok);
      });
  if (!s.ok()) done(s);
}

void Operations::Getattr(const Resolved& r, std::function<void(StatusOr<fattr3>)> done) {
  GETATTR3args a{};
  a.object = FhView(r.fh);
  std::string wire;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_GETATTR3args), &a, &wire);
  Status s = deps_.nfs->Call(kNfsProgram, kNfsVersion, NFSPROC3_GETATTR, r.cred, wire,
                             [done](StatusOr<RpcReply> reply) {
                               XdrValue<GETATTR3res> res(
                                   reinterpret_cast<xdrproc_t>(xdr_GETATTR3res));
                               if (!Succeeded(reply) || !res.Decode(reply->results()) ||
                                   res->status != NFS3_OK) {
                                 done(Status(StatusCode::kUnavailable, "upstream GETATTR failed"));
                                 return;
                               }
                               done(res->GETATTR3res_u.resok.obj_attributes);
                             });
  if (!s.ok()) done(s);
}

void Operations::StartWarm(const std::string& path, std::shared_ptr<ControlReply> reply) {
  // Walks go on when their operator leaves (Ctrl-C): bounded, so that
  // warms started and left again and again do not pile up.
  if (warms_.size() + warms_starting_ >= kMaxWarms) {
    reply->Finish(Status(StatusCode::kUnavailable,
                         std::to_string(warms_.size() + warms_starting_) +
                             " warms are running (one whose command was interrupted goes on "
                             "to its end): try again once one is done"));
    return;
  }
  warms_starting_++;
  Resolve(path, [this, reply](StatusOr<Resolved> r) {
    if (!r.ok()) {
      warms_starting_--;
      reply->Finish(r.status());
      return;
    }
    Resolved resolved = *r;
    Getattr(resolved, [this, resolved, reply](StatusOr<fattr3> attr) {
      warms_starting_--;
      if (!attr.ok()) {
        reply->Finish(attr.status());
        return;
      }
      WarmFrom(resolved, *attr, reply);
    });
  });
}

void Operations::WarmFrom(Resolved r, const fattr3& attr, std::shared_ptr<ControlReply> reply) {
  const ControlConfig& c = deps_.config->control;
  PrefetchOptions po;
  po.max_in_flight = c.warm_in_flight;
  po.max_queue = 1 << 20;  // docs/config.md, [control]: a warm's queue
  po.data_through_own_caller = true;  // the background class
  po.max_depth = c.warm_depth;
  po.small_file_bytes = c.warm_file_bytes;
  auto warm = std::make_unique<Warm>();
  warm->prefetcher =
      std::make_unique<Prefetcher>(*deps_.clock, *deps_.meta, deps_.read_path, *deps_.background,
                                   deps_.learn, po);
  // A reload (which may change the rules: squashing) stops the walk: its
  // credential was mapped by the old ones.
  warm->prefetcher->SetRulesVersion([exports = deps_.exports] { return exports->updates(); });
  warm->reply = reply;
  warm->start = SteadyClock::now();
  // The starting object as the one entry of a listing: the prefetcher then
  // lists it (a directory) or reads it (a file) and goes on from there.
  entryplus3 e{};
  char name[] = "warm";
  e.name = name;
  e.name_attributes.attributes_follow = TRUE;
  e.name_attributes.post_op_attr_u.attributes = attr;
  e.name_handle.handle_follows = TRUE;
  e.name_handle.post_op_fh3_u.handle = FhView(r.fh);
  READDIRPLUS3resok listing{};
  listing.reply.entries = &e;
  listing.reply.eof = TRUE;
  warm->prefetcher->OnListing(r.fh, listing, *r.exp, r.cred, 0);
  warms_.push_back(std::move(warm));
  if (!warm_timer_.armed()) warm_timer_.ArmPeriodic(std::chrono::milliseconds(200));
  PollWarms();
}

void Operations::PollWarms() {
  for (size_t i = 0; i < warms_.size();) {
    Warm& w = *warms_[i];
    w.prefetcher->Resume();  // work the upstream's full queue refused
    const PrefetchStats& st = w.prefetcher->stats();
    const uint64_t pending = w.prefetcher->queued() + w.prefetcher->in_flight();
    const uint64_t done = st.queued > pending ? st.queued - pending : 0;
    if (pending > 0 && w.reply->connected()) {
      w.reply->Progress(done, st.queued);
      ++i;
      continue;
    }
    if (w.reply->connected()) {
      const double s =
          std::chrono::duration<double>(SteadyClock::now() - w.start).count();
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%.1f s", s);
      w.reply->Progress(done, st.queued);
      w.reply->Line("warmed: " + std::to_string(st.lists) + " directory listings, " +
                    std::to_string(st.access) + " access checks, " + std::to_string(st.files) +
                    " files read, " + std::to_string(st.links) + " symlinks read, " +
                    std::to_string(st.errors) + " errors, " +
                    std::to_string(st.dropped + st.discarded) + " dropped, in " + secs);
      w.reply->Finish(Status::Ok());
    }
    // Done, or the operator went away (Ctrl-C): the walk goes on to its end
    // (work the upstream's full queue refused waits in its queue, resumed
    // above); a prefetcher with calls in flight must outlive them.
    if (w.prefetcher->in_flight() == 0 && w.prefetcher->queued() == 0) {
      warms_.erase(warms_.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
  if (warms_.empty()) warm_timer_.Cancel();
}

}  // namespace nfsedge
