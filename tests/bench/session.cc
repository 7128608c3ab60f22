#include "session.h"

#include <algorithm>

namespace nfsedge::bench {
namespace {

constexpr Millis kConnectTimeout(15000);

}  // namespace

StatusOr<std::unique_ptr<Session>> Session::Mount(const Options& options) {
  std::unique_ptr<Session> s(new Session(options));
  {
    auto mount = NfsConnection::Connect(options.mount, kConnectTimeout);
    if (!mount.ok()) return Status::Error("connect to the mount port: " + mount.status().message());
    NfsConnection& m = **mount;
    EventLoop loop;
    loop.Add(&m);
    std::optional<NfsReply> reply;
    Status queued = m.Mnt(options.export_path, [&](const NfsReply& r) { reply = r; });
    if (!queued.ok()) return queued;
    Status run = loop.Run([&] { return reply.has_value(); }, options.idle_timeout);
    if (!run.ok()) return Status::Error("MNT: " + run.message());
    if (!reply->ok()) {
      return Status::Error("MNT " + options.export_path + ": " + reply->Describe());
    }
    s->root_ = reply->fh;
    s->mount_counts_ = m.counts();
  }
  auto conn = NfsConnection::Connect(options.nfs, kConnectTimeout);
  if (!conn.ok()) return Status::Error("connect to the NFS port: " + conn.status().message());
  s->conns_.push_back(std::move(conn).value());
  s->loop_.Add(s->conns_.back().get());
  const std::string root = s->root_;
  auto fsinfo = s->Call({"FSINFO", [&](NfsConnection& c, NfsConnection::Callback cb) {
                           return c.Fsinfo(root, std::move(cb));
                         }});
  if (!fsinfo.ok()) return fsinfo.status();
  s->rsize_ = std::min(options.max_transfer, fsinfo->rtmax);
  s->wsize_ = std::min(options.max_transfer, fsinfo->wtmax);
  if (s->rsize_ == 0 || s->wsize_ == 0) return Status::Error("FSINFO: zero rtmax or wtmax");
  return s;
}

StatusOr<NfsConnection*> Session::OpenConnection() {
  auto conn = NfsConnection::Connect(options_.nfs, kConnectTimeout);
  if (!conn.ok()) return conn.status();
  conns_.push_back(std::move(conn).value());
  loop_.Add(conns_.back().get());
  return conns_.back().get();
}

CallCounts Session::counts() const {
  CallCounts all = mount_counts_;
  for (const auto& c : conns_) all.AddAll(c->counts());
  return all;
}

StatusOr<NfsReply> Session::Call(const Op& op) {
  if (broken_) return Status::Error(std::string(op.what) + ": the session has failed before");
  std::optional<NfsReply> reply;
  Status verdict;
  Status queued = op.issue(conn(), [&](const NfsReply& r) {
    if (!r.ok()) {
      verdict = Status::Error(std::string(op.what) + ": " + r.Describe());
    } else if (op.check) {
      verdict = op.check(r);
    }
    reply = r;
    reply->data = nullptr;
  });
  if (!queued.ok()) return queued;
  Status run = loop_.Run([&] { return reply.has_value(); }, options_.idle_timeout);
  if (!run.ok()) {
    broken_ = true;  // The callback still refers to this frame.
    return Status::Error(std::string(op.what) + ": " + run.message());
  }
  if (!verdict.ok()) return verdict;
  return std::move(*reply);
}

Status Session::Pipeline(int depth, const std::function<std::optional<Op>()>& next,
                         const std::function<Millis()>& tick) {
  if (broken_) return Status::Error("the session has failed before");
  int in_flight = 0;
  bool exhausted = false;
  Status first_error;
  auto refill = [&] {
    while (first_error.ok() && !exhausted && in_flight < depth) {
      std::optional<Op> op = next();
      if (!op) {
        exhausted = true;
        break;
      }
      const char* what = op->what;
      Check check = std::move(op->check);
      Status queued = op->issue(conn(), [&, what, check](const NfsReply& r) {
        --in_flight;
        if (!first_error.ok()) return;
        if (!r.ok()) {
          first_error = Status::Error(std::string(what) + ": " + r.Describe());
        } else if (check) {
          first_error = check(r);
        }
      });
      if (!queued.ok()) {
        first_error = queued;
        break;
      }
      ++in_flight;
    }
  };
  refill();
  Status run = loop_.Run(
      [&] {
        refill();
        return in_flight == 0 && (exhausted || !first_error.ok());
      },
      options_.idle_timeout, tick);
  if (!run.ok()) {
    broken_ = true;  // Callbacks in flight still refer to this frame.
    return run;
  }
  return first_error;
}

StatusOr<NfsReply> Session::Lookup(const std::string& dir, const std::string& name) {
  return Call({"LOOKUP", [&](NfsConnection& c, NfsConnection::Callback cb) {
                 return c.Lookup(dir, name, std::move(cb));
               }});
}

StatusOr<std::string> Session::LookupPath(const std::string& path) {
  std::string fh = root_;
  size_t start = 0;
  while (start < path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    std::string name = path.substr(start, slash - start);
    start = slash + 1;
    if (name.empty()) continue;
    auto r = Lookup(fh, name);
    if (!r.ok()) return Status::Error("LOOKUP " + path + ": " + r.status().message());
    fh = r->fh;
  }
  return fh;
}

StatusOr<std::string> Session::CreateFile(const std::string& dir, const std::string& name) {
  auto r = Call({"CREATE", [&](NfsConnection& c, NfsConnection::Callback cb) {
                   return c.Create(dir, name, std::move(cb));
                 }});
  if (!r.ok()) return r.status();
  if (r->fh.empty()) return Status::Error("CREATE " + name + ": no handle in the reply");
  return r->fh;
}

}  // namespace nfsedge::bench
