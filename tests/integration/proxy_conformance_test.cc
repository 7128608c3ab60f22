// proxy_conformance_test: every NFSv3 and MOUNTv3 procedure, the same
// operations directly against ganesha and through nfsedge, same answers.
// This file: files (CREATE in all modes, WRITE/READ/COMMIT, SETATTR, ACCESS,
// LOOKUP, GETATTR, large records). proxy_conformance_dir_test.cc: the rest.

#include <gtest/gtest.h>

#include "conformance_fixture.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.

TEST_F(ConformanceTest, NullProcedures) {
  RunOnBoth([](Side& s) {
    NfsResult n = s.nfs->Null();
    EXPECT_TRUE(n.rpc_ok) << n.rpc_error;
    s.Note("NFS NULL", n);
    RpcResult m = s.mnt->MountNull();
    EXPECT_TRUE(m.rpc_ok) << m.rpc_error;
    s.Note(std::string("MOUNT NULL: ") + (m.rpc_ok ? "ok" : "failed"));
  });
}

TEST_F(ConformanceTest, CreateInAllModes) {
  RunOnBoth([](Side& s) {
    Sattr mode;
    mode.mode = 0640;
    CreateResult c = s.nfs->Create(s.dir, "unchecked", mode);
    EXPECT_TRUE(c.ok()) << c.StatusString();
    EXPECT_FALSE(c.fh.empty());
    s.NoteAttr("CREATE UNCHECKED new", c, c.attr);
    if (c.attr) {
      EXPECT_EQ(c.attr->mode & 07777, 0640u);
    }

    CreateResult again = s.nfs->Create(s.dir, "unchecked", mode);
    EXPECT_TRUE(again.ok()) << again.StatusString();
    s.NoteAttr("CREATE UNCHECKED existing", again, again.attr);

    CreateResult guarded = s.nfs->Create(s.dir, "unchecked", mode, /*guarded=*/true);
    EXPECT_EQ(guarded.status, kNfs3ErrExist) << guarded.StatusString();
    s.Note("CREATE GUARDED existing", guarded);

    CreateResult fresh = s.nfs->Create(s.dir, "guarded", mode, /*guarded=*/true);
    EXPECT_TRUE(fresh.ok()) << fresh.StatusString();
    s.NoteAttr("CREATE GUARDED new", fresh, fresh.attr);

    CreateResult ex = s.nfs->CreateExclusive(s.dir, "exclusive", Verifier('A'));
    EXPECT_TRUE(ex.ok()) << ex.StatusString();
    s.Note("CREATE EXCLUSIVE new", ex);
    CreateResult retry = s.nfs->CreateExclusive(s.dir, "exclusive", Verifier('A'));
    EXPECT_TRUE(retry.ok()) << "a retried EXCLUSIVE create must succeed: " << retry.StatusString();
    s.Note("CREATE EXCLUSIVE retry, same verifier", retry);
    if (ex.ok() && retry.ok() && !retry.fh.empty()) {
      LookupResult a = s.nfs->Lookup(s.dir, "exclusive");
      EXPECT_EQ(retry.fh, a.fh) << "the retry must name the same file";
    }
    CreateResult other = s.nfs->CreateExclusive(s.dir, "exclusive", Verifier('B'));
    EXPECT_EQ(other.status, kNfs3ErrExist) << other.StatusString();
    s.Note("CREATE EXCLUSIVE other verifier", other);

    // What a client does after an exclusive create: set the real attributes.
    LookupResult l = s.nfs->Lookup(s.dir, "exclusive");
    Sattr set;
    set.mode = 0600;
    WccResult sa = s.nfs->Setattr(l.fh, set);
    EXPECT_TRUE(sa.ok()) << sa.StatusString();
    GetattrResult g = s.nfs->Getattr(l.fh);
    EXPECT_EQ(g.attr.type, static_cast<uint32_t>(FileType::kReg));
    EXPECT_EQ(g.attr.mode & 07777, 0600u);
    s.NoteAttr("GETATTR exclusive after SETATTR", g, g.attr);
  });
}

TEST_F(ConformanceTest, LookupAndGetattr) {
  RunOnBoth([](Side& s) {
    CreateResult c = s.nfs->Create(s.dir, "file", Sattr());
    ASSERT_TRUE(c.ok()) << c.StatusString();
    LookupResult hit = s.nfs->Lookup(s.dir, "file");
    EXPECT_TRUE(hit.ok()) << hit.StatusString();
    EXPECT_FALSE(hit.fh.empty());
    s.NoteAttr("LOOKUP hit", hit, hit.attr);
    s.Note(std::string("LOOKUP hit dir_attr ") + (hit.dir_attr ? "present" : "absent"));
    LookupResult miss = s.nfs->Lookup(s.dir, "no-such-file");
    EXPECT_EQ(miss.status, kNfs3ErrNoent) << miss.StatusString();
    s.Note("LOOKUP miss", miss);
    LookupResult dot = s.nfs->Lookup(s.dir, ".");
    s.Note("LOOKUP .", dot);
    LookupResult notdir = s.nfs->Lookup(hit.fh, "x");
    EXPECT_EQ(notdir.status, kNfs3ErrNotdir) << notdir.StatusString();
    s.Note("LOOKUP in a file", notdir);

    GetattrResult g = s.nfs->Getattr(hit.fh);
    EXPECT_TRUE(g.ok()) << g.StatusString();
    EXPECT_EQ(g.attr.type, static_cast<uint32_t>(FileType::kReg));
    EXPECT_EQ(g.attr.nlink, 1u);
    EXPECT_EQ(g.attr.size, 0u);
    s.NoteAttr("GETATTR file", g, g.attr);
    GetattrResult d = s.nfs->Getattr(s.dir);
    EXPECT_EQ(d.attr.type, static_cast<uint32_t>(FileType::kDir));
    s.NoteAttr("GETATTR dir", d, d.attr);
    GetattrResult root = s.nfs->Getattr(s.root);
    EXPECT_TRUE(root.ok()) << root.StatusString();
    s.Note("GETATTR root", root, "type=" + std::to_string(root.attr.type));
  });
}

TEST_F(ConformanceTest, WriteReadCommit) {
  RunOnBoth([](Side& s) {
    CreateResult c = s.nfs->Create(s.dir, "data", Sattr());
    ASSERT_TRUE(c.ok()) << c.StatusString();
    const std::string block = Pattern(4096, 1);
    WriteResult w1 = s.nfs->Write(c.fh, 0, block, Stable::kUnstable);
    EXPECT_TRUE(w1.ok()) << w1.StatusString();
    EXPECT_EQ(w1.count, 4096u);
    EXPECT_EQ(w1.verf.size(), 8u);
    // A server may commit more than asked (RFC 1813, WRITE): the proxy
    // answers an UNSTABLE write FILE_SYNC when it does not buffer it.
    s.Note("WRITE UNSTABLE 4096@0", w1,
           "count=" + std::to_string(w1.count) + " committed>=UNSTABLE=" +
               std::to_string(w1.committed >= static_cast<uint32_t>(Stable::kUnstable)));
    WriteResult w2 = s.nfs->Write(c.fh, 4096, "hello", Stable::kFileSync);
    EXPECT_TRUE(w2.ok()) << w2.StatusString();
    EXPECT_EQ(w2.committed, static_cast<uint32_t>(Stable::kFileSync));
    s.Note("WRITE FILE_SYNC 5@4096", w2,
           "count=" + std::to_string(w2.count) + " committed=" + std::to_string(w2.committed));
    WriteResult w3 = s.nfs->Write(c.fh, 8192, "sync", Stable::kDataSync);
    EXPECT_TRUE(w3.ok()) << w3.StatusString();
    EXPECT_GE(w3.committed, static_cast<uint32_t>(Stable::kDataSync));
    s.Note("WRITE DATA_SYNC 4@8192", w3, "count=" + std::to_string(w3.count));
    if (w3.wcc.after) {
      EXPECT_EQ(w3.wcc.after->size, 8196u);
    }

    CommitResult cm = s.nfs->Commit(c.fh, 0, 0);
    EXPECT_TRUE(cm.ok()) << cm.StatusString();
    EXPECT_EQ(cm.verf, w1.verf) << "no server restart: COMMIT verifier == WRITE verifier";
    s.Note("COMMIT", cm);

    ReadResult r = s.nfs->Read(c.fh, 0, 8192);
    EXPECT_TRUE(r.ok()) << r.StatusString();
    EXPECT_EQ(r.data, block + "hello" + std::string(8192 - 4101, '\0'));
    s.Note("READ 8192@0", r,
           "count=" + std::to_string(r.count) + " eof=" + std::to_string(r.eof) + " same_data=" +
               std::to_string(r.data == block + "hello" + std::string(8192 - 4101, '\0')));
    ReadResult tail = s.nfs->Read(c.fh, 8190, 100);
    EXPECT_EQ(tail.data, std::string("\0\0sync", 6));
    EXPECT_TRUE(tail.eof);
    s.Note("READ across EOF", tail,
           "count=" + std::to_string(tail.count) + " eof=" + std::to_string(tail.eof));
    ReadResult past = s.nfs->Read(c.fh, 1 << 20, 100);
    EXPECT_TRUE(past.ok()) << past.StatusString();
    EXPECT_EQ(past.count, 0u);
    EXPECT_TRUE(past.eof);
    s.Note("READ past EOF", past,
           "count=" + std::to_string(past.count) + " eof=" + std::to_string(past.eof));
    GetattrResult g = s.nfs->Getattr(c.fh);
    EXPECT_EQ(g.attr.size, 8196u);
    s.NoteAttr("GETATTR after writes", g, g.attr);

    ReadResult dir = s.nfs->Read(s.dir, 0, 10);
    EXPECT_EQ(dir.status, kNfs3ErrIsdir) << dir.StatusString();
    s.Note("READ a directory", dir);
    WriteResult wdir = s.nfs->Write(s.dir, 0, "x", Stable::kFileSync);
    s.Note("WRITE a directory", wdir);
  });
}

TEST_F(ConformanceTest, LargeReadWriteOneMiB) {
  const std::string data = Pattern(1 << 20, 7);
  RunOnBoth([&](Side& s) {
    CreateResult c = s.nfs->Create(s.dir, "big", Sattr());
    ASSERT_TRUE(c.ok()) << c.StatusString();
    // One 1 MiB WRITE call and one 1 MiB READ call: records of > 1 MiB.
    WriteResult w = s.nfs->Write(c.fh, 0, data, Stable::kFileSync);
    EXPECT_TRUE(w.ok()) << w.StatusString();
    EXPECT_EQ(w.count, 1u << 20);
    s.Note("WRITE 1 MiB FILE_SYNC", w, "count=" + std::to_string(w.count));
    ReadResult r = s.nfs->Read(c.fh, 0, 1 << 20);
    EXPECT_TRUE(r.ok()) << r.StatusString();
    EXPECT_EQ(r.count, 1u << 20);
    EXPECT_TRUE(r.data == data) << "1 MiB read back differs";
    s.Note("READ 1 MiB", r,
           "count=" + std::to_string(r.count) + " same_data=" + std::to_string(r.data == data));
    // Unaligned, spanning: 300000 bytes at offset 777777.
    ReadResult mid = s.nfs->Read(c.fh, 777777, 300000);
    EXPECT_TRUE(mid.data == data.substr(777777, 300000));
    s.Note("READ 300000@777777", mid,
           "count=" + std::to_string(mid.count) + " eof=" + std::to_string(mid.eof));
    GetattrResult g = s.nfs->Getattr(c.fh);
    EXPECT_EQ(g.attr.size, 1u << 20);
    s.NoteAttr("GETATTR big", g, g.attr);
  });
}

TEST_F(ConformanceTest, Setattr) {
  RunOnBoth([](Side& s) {
    Sattr mode;
    mode.mode = 0644;
    CreateResult c = s.nfs->Create(s.dir, "f", mode);
    ASSERT_TRUE(c.ok()) << c.StatusString();
    WriteResult w = s.nfs->Write(c.fh, 0, "0123456789", Stable::kFileSync);
    ASSERT_TRUE(w.ok()) << w.StatusString();

    Sattr chmod;
    chmod.mode = 0751;
    WccResult m = s.nfs->Setattr(c.fh, chmod);
    EXPECT_TRUE(m.ok()) << m.StatusString();
    GetattrResult g = s.nfs->Getattr(c.fh);
    EXPECT_EQ(g.attr.mode & 07777, 0751u);
    s.NoteAttr("SETATTR mode 0751", m, g.attr);

    Sattr truncate;
    truncate.size = 3;
    WccResult t = s.nfs->Setattr(c.fh, truncate);
    EXPECT_TRUE(t.ok()) << t.StatusString();
    ReadResult r = s.nfs->Read(c.fh, 0, 100);
    EXPECT_EQ(r.data, "012");
    s.Note("SETATTR size 3", t, "read=" + r.data);

    Sattr chown;
    chown.uid = 1234;
    chown.gid = 5678;
    WccResult o = s.nfs->Setattr(c.fh, chown);
    EXPECT_TRUE(o.ok()) << o.StatusString();
    g = s.nfs->Getattr(c.fh);
    EXPECT_EQ(g.attr.uid, 1234u);
    EXPECT_EQ(g.attr.gid, 5678u);
    s.NoteAttr("SETATTR uid/gid", o, g.attr);

    Sattr times;
    times.mtime_how = Sattr::TimeHow::kClientTime;
    times.mtime = {1000000000, 0};
    times.atime_how = Sattr::TimeHow::kClientTime;
    times.atime = {1000000001, 0};
    WccResult tm = s.nfs->Setattr(c.fh, times);
    EXPECT_TRUE(tm.ok()) << tm.StatusString();
    g = s.nfs->Getattr(c.fh);
    EXPECT_EQ(g.attr.mtime.seconds, 1000000000u);
    EXPECT_EQ(g.attr.atime.seconds, 1000000001u);
    s.Note("SETATTR client times", tm,
           "mtime=" + std::to_string(g.attr.mtime.seconds) +
               " atime=" + std::to_string(g.attr.atime.seconds));

    WccResult bad = s.nfs->Setattr(c.fh, chmod, NfsTime{1, 0});
    EXPECT_EQ(bad.status, kNfs3ErrNotSync) << bad.StatusString();
    s.Note("SETATTR guard with wrong ctime", bad);
    WccResult good = s.nfs->Setattr(c.fh, mode, g.attr.ctime);
    EXPECT_TRUE(good.ok()) << good.StatusString();
    s.Note("SETATTR guard with right ctime", good);
    EXPECT_TRUE(good.wcc.after.has_value());
  });
}

TEST_F(ConformanceTest, Access) {
  RunOnBoth([](Side& s) {
    Sattr mode;
    mode.mode = 0600;
    CreateResult c = s.nfs->Create(s.dir, "private", mode);
    ASSERT_TRUE(c.ok()) << c.StatusString();
    AccessResult root = s.nfs->Access(c.fh, kAccessAll);
    EXPECT_TRUE(root.ok()) << root.StatusString();
    EXPECT_TRUE(root.access & kAccessRead);
    s.Note("ACCESS file as root", root, "access=" + std::to_string(root.access));
    AccessResult dir = s.nfs->Access(s.dir, kAccessAll);
    s.Note("ACCESS dir as root", dir, "access=" + std::to_string(dir.access));

    // Another user may not read or change a 0600 root-owned file.
    Credential user;
    user.uid = 1000;
    user.gid = 1000;
    s.nfs->SetCredential(user);
    AccessResult other = s.nfs->Access(c.fh, kAccessAll);
    EXPECT_TRUE(other.ok()) << other.StatusString();
    EXPECT_FALSE(other.access & kAccessRead);
    EXPECT_FALSE(other.access & kAccessModify);
    s.Note("ACCESS file as uid 1000", other, "access=" + std::to_string(other.access));
    ReadResult denied = s.nfs->Read(c.fh, 0, 10);
    EXPECT_EQ(denied.status, kNfs3ErrAcces) << denied.StatusString();
    s.Note("READ as uid 1000", denied);
    s.nfs->SetCredential(Credential());
  });
}

// 5 MiB written and read back in 1 MiB calls (the size clients use).
TEST_F(ConformanceTest, FiveMiBInOneMiBCalls) {
  const std::string data = Pattern(5 << 20, 11);
  RunOnBoth([&](Side& s) {
    CreateResult c = s.nfs->Create(s.dir, "five-mib", Sattr());
    ASSERT_TRUE(c.ok()) << c.StatusString();
    WriteResult w = s.nfs->WriteAll(c.fh, 0, data, Stable::kUnstable, 1 << 20);
    EXPECT_TRUE(w.ok()) << w.StatusString();
    EXPECT_EQ(w.count, 5u << 20);
    CommitResult cm = s.nfs->Commit(c.fh, 0, 0);
    EXPECT_TRUE(cm.ok()) << cm.StatusString();
    s.Note("WRITE 5 x 1 MiB UNSTABLE + COMMIT", cm, "count=" + std::to_string(w.count));
    ReadResult all = s.nfs->ReadAll(c.fh, 0, 6 << 20, 1 << 20);
    EXPECT_TRUE(all.ok()) << all.StatusString();
    EXPECT_TRUE(all.eof);
    EXPECT_TRUE(all.data == data) << "read back " << all.data.size() << " bytes, differing";
    s.Note("READ all in 1 MiB calls", all, "same_data=" + std::to_string(all.data == data));
  });
}

// Group membership travels with the credential.
TEST_F(ConformanceTest, SupplementaryGroups) {
  RunOnBoth([](Side& s) {
    Sattr attr;
    attr.mode = 0640;
    CreateResult c = s.nfs->Create(s.dir, "group-file", attr);
    ASSERT_TRUE(c.ok()) << c.StatusString();
    ASSERT_TRUE(s.nfs->Write(c.fh, 0, "for group 500", Stable::kFileSync).ok());
    Sattr chgrp;
    chgrp.gid = 500;
    ASSERT_TRUE(s.nfs->Setattr(c.fh, chgrp).ok());
    Credential member;
    member.uid = 1000;
    member.gid = 1000;
    member.groups = {20, 500, 600};
    s.nfs->SetCredential(member);
    ReadResult ok = s.nfs->Read(c.fh, 0, 100);
    EXPECT_EQ(ok.data, "for group 500") << ok.StatusString();
    s.Note("READ as a member of group 500", ok);
    WriteResult denied = s.nfs->Write(c.fh, 0, "x", Stable::kFileSync);
    EXPECT_EQ(denied.status, kNfs3ErrAcces) << denied.StatusString();
    s.Note("WRITE as a member of group 500", denied);
    Credential outsider = member;
    outsider.groups = {20, 600};
    s.nfs->SetCredential(outsider);
    ReadResult no = s.nfs->Read(c.fh, 0, 100);
    EXPECT_EQ(no.status, kNfs3ErrAcces) << no.StatusString();
    s.Note("READ as a non-member", no);
    s.nfs->SetCredential(Credential());
  });
}

// nfsedge serves both programs on both of its ports (see the example config).
TEST_F(ConformanceTest, ProxyPortsServeBothPrograms) {
  ProxyProcess* p = testbed()->proxy();
  auto on_mount_port = ConnectOrFail(p->host(), p->mount_port());
  auto on_nfs_port = ConnectOrFail(p->host(), p->nfs_port());
  ASSERT_TRUE(on_mount_port && on_nfs_port);
  GetattrResult g = on_mount_port->Getattr(proxied_.root);
  EXPECT_TRUE(g.ok()) << "GETATTR on the MOUNT port: " << g.StatusString();
  MntResult m = on_nfs_port->Mnt(proxied_.export_path);
  EXPECT_TRUE(m.ok()) << "MNT on the NFS port: " << MountStatName(m.status) << m.rpc_error;
}

}  // namespace
}  // namespace nfsedge::itest
