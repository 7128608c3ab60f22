// The fixture of the ReadPath tests (read_path_test, read_path_write_test):
// a fake clock, an in-memory upstream (FakeUpstream) holding the files'
// bytes and attributes, and an event loop driven by hand.
#ifndef NFSEDGE_TESTS_UNIT_READ_PATH_FIXTURE_H_
#define NFSEDGE_TESTS_UNIT_READ_PATH_FIXTURE_H_

#include "proxy/read_path.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cache/block_cache.h"
#include "cache/clock.h"
#include "cache/disk_tier.h"
#include "cache/path_estimator.h"
#include "cache/readahead.h"
#include "proxy/metadata_cache.h"
#include "proxy/nfs_procs.h"
#include "rpc/event_loop.h"
#include "rpc/xdr_codec.h"
#include "test_loop.h"
#include "xdr_test_util.h"

namespace nfsedge::read_path_test {

constexpr uint32_t kWall0 = 1704067200;  // FakeClock's wall start
constexpr uint32_t kBlock = 4096;

using test_xdr::Bytes;
using test_xdr::Fh;
using test_xdr::PostOp;
using test_xdr::Proc;
using test_xdr::Xdr;

// `size` bytes whose value depends on the position and on `seed`, so that a
// byte from the wrong offset or the wrong version shows.
inline std::string Content(size_t size, int seed) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i)
    s[i] = static_cast<char>('A' + (i * 7 + i / kBlock + seed) % 53);
  return s;
}

inline ExportConfig MakeExportConfig(uint32_t lifetime) {
  ExportConfig c;
  c.path = "/e";
  c.upstream_path = "/e";
  c.acregmin = c.acdirmin = lifetime;
  c.acregmax = c.acdirmax = lifetime;
  return c;
}

// A READ3res as the client receives it.
struct ReadReply {
  nfsstat3 status = NFS3ERR_IO;
  uint32_t count = 0;
  bool eof = false;
  std::string data;
};

inline ReadReply DecodeRead(const std::string& results) {
  XdrValue<READ3res> res(Proc(xdr_READ3res));
  ReadReply r;
  EXPECT_TRUE(res.Decode(results));
  r.status = res->status;
  if (res->status == NFS3_OK) {
    const READ3resok& ok = res->READ3res_u.resok;
    r.count = ok.count;
    r.eof = ok.eof;
    r.data.assign(ok.data.data_val, ok.data.data_len);
  }
  return r;
}

// What one client READ got: exactly one of reply and forward should run.
struct Outcome {
  int replies = 0;
  int forwards = 0;
  std::string results;
  ReadReply reply() const { return DecodeRead(results); }
};

// An upstream READ the proxy sent.
struct SentRead {
  uint64_t offset;
  uint32_t count;
  std::optional<uint64_t> expected;  // the reply's bytes the scheduler was told to expect
};

// The upstream's view of one file.
struct FakeFile {
  std::string data;
  fattr3 attr{};
};

inline fattr3 FileAttr(uint64_t size, uint32_t changed_at) {
  fattr3 a{};
  a.type = NF3REG;
  a.mode = 0644;
  a.nlink = 1;
  a.uid = 1000;
  a.gid = 1000;
  a.size = size;
  a.fileid = 42;
  a.mtime.seconds = a.ctime.seconds = changed_at;
  return a;
}

// The disk tier's `post`: closures from its pool threads, run on the test's
// thread when it asks.
class PostQueue {
 public:
  PostFunction AsFunction() {
    return [this](std::function<void()> fn) {
      std::lock_guard<std::mutex> l(mu_);
      queue_.push_back(std::move(fn));
      cv_.notify_all();
    };
  }
  // Runs posted closures until `done` holds; false after 10 s without one.
  bool RunUntil(const std::function<bool()>& done, const std::function<void()>& between) {
    while (!done()) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> l(mu_);
        if (!cv_.wait_for(l, std::chrono::seconds(10), [&] { return !queue_.empty(); })) {
          return false;
        }
        fn = std::move(queue_.front());
        queue_.pop_front();
      }
      fn();
      between();
    }
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
};

class ReadPathTest : public ::testing::Test {
 protected:
  ReadPathTest()
      : base_(event_base_new()),
        exp_(0, MakeExportConfig(60)),
        zero_(1, MakeExportConfig(0)),
        meta_(clock_, CacheConfig{}),
        blocks_(BlockCacheOptions{64 << 20, kBlock}),
        readahead_(clock_, SmallWindow()),
        path_(clock_),
        up_(base_.get()) {
    up_.set_responder([this](const FakeUpstream::Seen& s) -> std::optional<std::string> {
      if (hold_) return std::nullopt;
      return Respond(s);
    });
    SetFile(Content(10000, 0), kWall0 - 3600);
    ReadPathOptions o;
    o.readahead_max = 0;  // read-ahead only where a test asks for it
    MakeReadPath(o);
  }

  void TearDown() override { Drain(); }

  static ReadaheadOptions SmallWindow() {
    ReadaheadOptions o;
    o.match_window = 64 << 10;
    return o;
  }

  void MakeReadPath(const ReadPathOptions& o, DiskTier* disk = nullptr) {
    rp_ = std::make_unique<ReadPath>(clock_, meta_, blocks_, disk, readahead_, path_, up_, o);
  }
  // Runs `body` with a read path (no read-ahead) whose blocks also go to a
  // disk tier of kBlock blocks (one thread, its callbacks posted to the
  // PostQueue) in a temporary directory, removed afterwards with the read
  // path and the tier.
  void WithDiskTier(const std::function<void(DiskTier&, PostQueue&)>& body) {
    char tmpl[] = "/tmp/nfsedge-read-path-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const std::string dir = tmpl;
    {
      PostQueue posted;
      DiskTierOptions d;
      d.dir = dir + "/store";
      d.block_size = kBlock;
      d.threads = 1;
      StatusOr<std::unique_ptr<DiskTier>> disk = DiskTier::Open(d, posted.AsFunction());
      if (disk.ok()) {
        ReadPathOptions o;
        o.readahead_max = 0;
        MakeReadPath(o, disk->get());
        body(**disk, posted);
        rp_.reset();
      } else {
        ADD_FAILURE() << disk.status().ToString();
      }
    }
    std::filesystem::remove_all(dir);
  }

  // Runs what the loop has to run (replies delivered by the FakeUpstream)
  // until nothing is left.
  void Drain() {
    for (int i = 0; i < 10000; ++i) {
      if (event_base_loop(base_.get(), EVLOOP_NONBLOCK) != 0) return;
    }
    ADD_FAILURE() << "the loop never went idle";
  }

  // The upstream's copy of file_ becomes `data`, changed at `changed_at`.
  void SetFile(std::string data, uint32_t changed_at) {
    FakeFile& f = files_[file_];
    f.attr = FileAttr(data.size(), changed_at);
    f.data = std::move(data);
  }
  const FakeFile& file() { return files_[file_]; }

  // The upstream's answer to a call, from files_.
  std::string Respond(const FakeUpstream::Seen& s) {
    switch (s.proc) {
      case NFSPROC3_GETATTR: {
        XdrValue<GETATTR3args> a(Proc(xdr_GETATTR3args));
        EXPECT_TRUE(a.Decode(s.args));
        GETATTR3res res{};
        res.status = NFS3_OK;
        res.GETATTR3res_u.resok.obj_attributes = FileOf(a->object).attr;
        return Xdr(Proc(xdr_GETATTR3res), res);
      }
      case NFSPROC3_READ: {
        XdrValue<READ3args> a(Proc(xdr_READ3args));
        EXPECT_TRUE(a.Decode(s.args));
        if (read_error_) return ReadError(NFS3ERR_IO);
        const FakeFile& f = FileOf(a->file);
        uint32_t count = std::min<uint32_t>(a->count, server_rtmax_);
        std::string piece =
            a->offset >= f.data.size() ? std::string() : f.data.substr(a->offset, count);
        READ3res res{};
        res.status = NFS3_OK;
        READ3resok& ok = res.READ3res_u.resok;
        ok.file_attributes = PostOp(f.attr);
        ok.count = static_cast<count3>(piece.size());
        ok.eof = a->offset + piece.size() >= f.data.size();
        ok.data.data_val = piece.data();
        ok.data.data_len = static_cast<u_int>(piece.size());
        return Xdr(Proc(xdr_READ3res), res);
      }
      case NFSPROC3_FSINFO: {
        fsinfo_asked_++;
        FSINFO3res res{};
        res.status = NFS3_OK;
        FSINFO3resok& ok = res.FSINFO3res_u.resok;
        ok.rtmax = ok.wtmax = server_rtmax_ == ~0u ? (1u << 20) : server_rtmax_;
        ok.rtpref = ok.wtpref = ok.rtmax;
        ok.rtmult = ok.wtmult = 4096;
        ok.dtpref = 65536;
        return Xdr(Proc(xdr_FSINFO3res), res);
      }
      default:
        ADD_FAILURE() << "unexpected upstream procedure " << s.proc;
        return std::string();
    }
  }

  const FakeFile& FileOf(const nfs_fh3& fh) {
    return files_[std::string(fh.data.data_val, fh.data.data_len)];
  }

  std::string ReadError(nfsstat3 status) {
    READ3res res{};
    res.status = status;
    return Xdr(Proc(xdr_READ3res), res);
  }

  // The metadata cache learns the upstream's ACCESS reply for `cred` on
  // file_ (with the file's current attributes, which makes them fresh).
  // (through `through`: exp_ unless given).
  void LearnAccess(const OpaqueAuth& cred, uint32_t asked, uint32_t granted,
                   const Export* through = nullptr) {
    ACCESS3args args{Fh(file_), asked};
    ACCESS3res res{};
    res.status = NFS3_OK;
    res.ACCESS3res_u.resok.obj_attributes = PostOp(file().attr);
    res.ACCESS3res_u.resok.access = granted;
    meta_.Learn(*FindNfsProc(NFSPROC3_ACCESS), &args, Xdr(Proc(xdr_ACCESS3res), res),
                through ? *through : exp_, CredKeyOf(cred));
  }
  // The metadata cache learns `a` for `fh` from a GETATTR of user_'s
  // through `e`.
  void MetaGetattr(const Export& e, const std::string& fh, const fattr3& a) {
    GETATTR3args args{Fh(fh)};
    GETATTR3res res{};
    res.status = NFS3_OK;
    res.GETATTR3res_u.resok.obj_attributes = a;
    meta_.Learn(*FindNfsProc(NFSPROC3_GETATTR), &args, Xdr(Proc(xdr_GETATTR3res), res), e,
                CredKeyOf(user_));
  }
  // A READ of file_'s first two blocks that user_ (READ granted) sends and
  // the read path forwards as is: `*a` its arguments (viewing file_), and
  // the call as the upstream sees it.
  FakeUpstream::Seen ForwardedRead(READ3args* a) {
    LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
    *a = READ3args{};
    a->file = Fh(file_);
    a->offset = 0;
    a->count = 2 * kBlock;
    return FakeUpstream::Seen{kNfsProgram, kNfsVersion, NFSPROC3_READ, user_,
                              Xdr(Proc(xdr_READ3args), *a), nullptr, std::nullopt};
  }
  // The metadata cache learns a GETATTR reply for file_ on `exp`.
  // A GETATTR of file_ sent now, after every reply learned so far, and
  // answered with file()'s attributes.
  void LearnGetattr(const Export& exp) {
    GETATTR3args args{Fh(file_)};
    GETATTR3res res{};
    res.status = NFS3_OK;
    res.GETATTR3res_u.resok.obj_attributes = file().attr;
    std::this_thread::sleep_for(std::chrono::microseconds(1));
    meta_.Learn(*FindNfsProc(NFSPROC3_GETATTR), &args, Xdr(Proc(xdr_GETATTR3res), res), exp,
                CredKeyOf(user_), SentCall{std::chrono::steady_clock::now(), 1});
  }
  // An FSINFO reply of export `exp` (default exp_).
  void LearnFsinfo(uint32_t rtmax, uint32_t rtpref, const Export* exp = nullptr) {
    FSINFO3res res{};
    res.status = NFS3_OK;
    res.FSINFO3res_u.resok.rtmax = rtmax;
    res.FSINFO3res_u.resok.rtpref = rtpref;
    res.FSINFO3res_u.resok.rtmult = kBlock;
    rp_->LearnFsinfo(Xdr(Proc(xdr_FSINFO3res), res), (exp ? exp : &exp_)->id());
  }

  void Read(uint64_t offset, uint32_t count, Outcome* out) { Read(offset, count, user_, out); }
  void Read(uint64_t offset, uint32_t count, const OpaqueAuth& cred, Outcome* out,
            const Export* through = nullptr) {
    READ3args a{};
    a.file = Fh(file_);
    a.offset = offset;
    a.count = count;
    rp_->Serve(
        a, through ? *through : exp_, cred,
        [out](std::string results) {
          out->replies++;
          out->results = std::move(results);
        },
        [out] { out->forwards++; });
  }
  // Serves a READ, lets the upstream answer, and returns what the client got.
  Outcome ReadNow(uint64_t offset, uint32_t count) {
    Outcome out;
    Read(offset, count, &out);
    Drain();
    return out;
  }

  // The upstream READs sent so far, in order.
  std::vector<SentRead> Reads() const {
    std::vector<SentRead> out;
    for (const FakeUpstream::Seen& s : up_.calls) {
      if (s.proc != NFSPROC3_READ) continue;
      XdrValue<READ3args> a(Proc(xdr_READ3args));
      EXPECT_TRUE(a.Decode(s.args));
      out.push_back(SentRead{a->offset, a->count, s.expected_reply});
    }
    return out;
  }
  size_t CallsOf(uint32_t proc) const {
    size_t n = 0;
    for (const FakeUpstream::Seen& s : up_.calls) n += s.proc == proc;
    return n;
  }

  // Expects `out` to be one NFS3_OK reply carrying the file's bytes
  // [offset, offset + count) as they are now, with the right eof.
  void ExpectData(const Outcome& out, uint64_t offset, uint32_t count) {
    ASSERT_EQ(out.forwards, 0);
    ASSERT_EQ(out.replies, 1);
    ReadReply r = out.reply();
    const std::string& all = file().data;
    std::string want = offset >= all.size() ? std::string() : all.substr(offset, count);
    EXPECT_EQ(r.status, NFS3_OK);
    EXPECT_EQ(r.count, want.size());
    EXPECT_EQ(r.data.size(), want.size());
    EXPECT_TRUE(r.data == want) << "wrong bytes at offset " << offset;
    EXPECT_EQ(r.eof, offset + want.size() >= all.size());
  }

  FakeClock clock_;
  EventBasePtr base_;
  Export exp_, zero_;
  MetadataCache meta_;
  BlockCache blocks_;
  ReadaheadTable readahead_;
  PathEstimator path_;
  FakeUpstream up_;
  std::unique_ptr<ReadPath> rp_;

  std::map<std::string, FakeFile> files_;
  bool hold_ = false;            // hold every call; the test answers with up_.Answer
  bool read_error_ = false;      // READs fail with NFS3ERR_IO
  uint32_t server_rtmax_ = ~0u;  // the server returns at most this many bytes per READ
  int fsinfo_asked_ = 0;         // FSINFO calls answered
  std::string file_ = "FILE-HANDLE-0001";
  OpaqueAuth user_ = SysCred(1000, 1000);
  OpaqueAuth other_ = SysCred(2000, 2000);
};

}  // namespace nfsedge::read_path_test

#endif  // NFSEDGE_TESTS_UNIT_READ_PATH_FIXTURE_H_
