// proxy_conformance_test, part 2: directories and names (MKDIR, RMDIR,
// SYMLINK, READLINK, MKNOD, REMOVE, RENAME, LINK, READDIR, READDIRPLUS),
// file-system information (FSSTAT, FSINFO, PATHCONF) and MOUNTv3.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "conformance_fixture.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.

std::string Names(const std::vector<DirEntry>& entries) {
  std::vector<std::string> names;
  for (const DirEntry& e : entries) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& n : names) out += n + ",";
  return out;
}

TEST_F(ConformanceTest, MkdirRmdir) {
  RunOnBoth([](Side& s) {
    Sattr mode;
    mode.mode = 0750;
    CreateResult d = s.nfs->Mkdir(s.dir, "sub", mode);
    EXPECT_TRUE(d.ok()) << d.StatusString();
    EXPECT_FALSE(d.fh.empty());
    if (d.attr) {
      EXPECT_EQ(d.attr->type, static_cast<uint32_t>(FileType::kDir));
      EXPECT_EQ(d.attr->mode & 07777, 0750u);
    }
    s.NoteAttr("MKDIR sub", d, d.attr);
    CreateResult again = s.nfs->Mkdir(s.dir, "sub", mode);
    EXPECT_EQ(again.status, kNfs3ErrExist) << again.StatusString();
    s.Note("MKDIR existing", again);

    ASSERT_TRUE(s.nfs->Create(d.fh, "inside", Sattr()).ok());
    WccResult full = s.nfs->Rmdir(s.dir, "sub");
    EXPECT_EQ(full.status, kNfs3ErrNotempty) << full.StatusString();
    s.Note("RMDIR non-empty", full);
    WccResult isdir = s.nfs->Remove(s.dir, "sub");
    EXPECT_FALSE(isdir.ok());
    s.Note("REMOVE a directory", isdir);
    WccResult notdir = s.nfs->Rmdir(d.fh, "inside");
    EXPECT_EQ(notdir.status, kNfs3ErrNotdir) << notdir.StatusString();
    s.Note("RMDIR a file", notdir);
    EXPECT_TRUE(s.nfs->Remove(d.fh, "inside").ok());
    WccResult empty = s.nfs->Rmdir(s.dir, "sub");
    EXPECT_TRUE(empty.ok()) << empty.StatusString();
    s.Note("RMDIR empty", empty);
    WccResult gone = s.nfs->Rmdir(s.dir, "sub");
    EXPECT_EQ(gone.status, kNfs3ErrNoent) << gone.StatusString();
    s.Note("RMDIR missing", gone);
    GetattrResult stale = s.nfs->Getattr(d.fh);
    EXPECT_EQ(stale.status, kNfs3ErrStale) << stale.StatusString();
    s.Note("GETATTR removed dir", stale);
  });
}

TEST_F(ConformanceTest, SymlinkReadlink) {
  RunOnBoth([](Side& s) {
    CreateResult l = s.nfs->Symlink(s.dir, "link", "../some/target path");
    EXPECT_TRUE(l.ok()) << l.StatusString();
    if (l.attr) {
      EXPECT_EQ(l.attr->type, static_cast<uint32_t>(FileType::kLnk));
    }
    s.Note("SYMLINK", l, l.attr ? "type=" + std::to_string(l.attr->type) : "");
    LookupResult lk = s.nfs->Lookup(s.dir, "link");
    ASSERT_TRUE(lk.ok()) << lk.StatusString();
    ReadlinkResult r = s.nfs->Readlink(lk.fh);
    EXPECT_TRUE(r.ok()) << r.StatusString();
    EXPECT_EQ(r.target, "../some/target path");
    s.Note("READLINK", r, "target=" + r.target);
    CreateResult again = s.nfs->Symlink(s.dir, "link", "x");
    EXPECT_EQ(again.status, kNfs3ErrExist) << again.StatusString();
    s.Note("SYMLINK existing", again);
    CreateResult f = s.nfs->Create(s.dir, "file", Sattr());
    ReadlinkResult notlink = s.nfs->Readlink(f.fh);
    EXPECT_FALSE(notlink.ok());
    s.Note("READLINK a file", notlink);
  });
}

TEST_F(ConformanceTest, Mknod) {
  RunOnBoth([](Side& s) {
    Sattr mode;
    mode.mode = 0644;
    CreateResult fifo = s.nfs->Mknod(s.dir, "fifo", FileType::kFifo, mode);
    EXPECT_TRUE(fifo.ok()) << fifo.StatusString();
    s.NoteAttr("MKNOD FIFO", fifo, fifo.attr);
    LookupResult l = s.nfs->Lookup(s.dir, "fifo");
    EXPECT_EQ(l.attr ? l.attr->type : 0, static_cast<uint32_t>(FileType::kFifo));
    s.NoteAttr("LOOKUP fifo", l, l.attr);
    CreateResult sock = s.nfs->Mknod(s.dir, "sock", FileType::kSock, mode);
    s.NoteAttr("MKNOD SOCK", sock, sock.attr);
    CreateResult chr = s.nfs->Mknod(s.dir, "null", FileType::kChr, mode, 1, 3);
    s.NoteAttr("MKNOD CHR 1,3", chr, chr.attr);
    CreateResult reg = s.nfs->Mknod(s.dir, "reg", FileType::kReg, mode);
    EXPECT_FALSE(reg.ok());
    s.Note("MKNOD REG", reg);
    CreateResult dup = s.nfs->Mknod(s.dir, "fifo", FileType::kFifo, mode);
    EXPECT_EQ(dup.status, kNfs3ErrExist) << dup.StatusString();
    s.Note("MKNOD existing", dup);
  });
}

TEST_F(ConformanceTest, RemoveRenameLink) {
  RunOnBoth([](Side& s) {
    CreateResult a = s.nfs->Create(s.dir, "a", Sattr());
    ASSERT_TRUE(a.ok()) << a.StatusString();
    ASSERT_TRUE(s.nfs->Write(a.fh, 0, "contents", Stable::kFileSync).ok());
    LinkResult ln = s.nfs->Link(a.fh, s.dir, "b");
    EXPECT_TRUE(ln.ok()) << ln.StatusString();
    if (ln.attr) {
      EXPECT_EQ(ln.attr->nlink, 2u);
    }
    s.NoteAttr("LINK a -> b", ln, ln.attr);
    LinkResult exists = s.nfs->Link(a.fh, s.dir, "b");
    EXPECT_EQ(exists.status, kNfs3ErrExist) << exists.StatusString();
    s.Note("LINK onto existing", exists);
    LinkResult dirlink = s.nfs->Link(s.dir, s.dir, "dirlink");
    EXPECT_FALSE(dirlink.ok());
    s.Note("LINK a directory", dirlink);

    CreateResult sub = s.nfs->Mkdir(s.dir, "sub", Sattr());
    ASSERT_TRUE(sub.ok()) << sub.StatusString();
    RenameResult mv = s.nfs->Rename(s.dir, "a", sub.fh, "c");
    EXPECT_TRUE(mv.ok()) << mv.StatusString();
    s.Note("RENAME a -> sub/c", mv);
    EXPECT_EQ(s.nfs->Lookup(s.dir, "a").status, kNfs3ErrNoent);
    LookupResult c = s.nfs->Lookup(sub.fh, "c");
    EXPECT_TRUE(c.ok()) << c.StatusString();
    s.NoteAttr("LOOKUP sub/c", c, c.attr);
    ReadResult data = s.nfs->Read(c.fh, 0, 100);
    EXPECT_EQ(data.data, "contents");
    RenameResult missing = s.nfs->Rename(s.dir, "nope", s.dir, "x");
    EXPECT_EQ(missing.status, kNfs3ErrNoent) << missing.StatusString();
    s.Note("RENAME missing", missing);
    RenameResult over = s.nfs->Rename(sub.fh, "c", s.dir, "b");  // Same inode.
    EXPECT_TRUE(over.ok()) << over.StatusString();
    s.Note("RENAME onto a hard link of itself", over);
    CreateResult d = s.nfs->Create(s.dir, "d", Sattr());
    RenameResult replace = s.nfs->Rename(s.dir, "d", s.dir, "b");
    EXPECT_TRUE(replace.ok()) << replace.StatusString();
    s.Note("RENAME replacing a file", replace);
    RenameResult into_file = s.nfs->Rename(s.dir, "b", s.dir, "sub");
    EXPECT_FALSE(into_file.ok());
    s.Note("RENAME file onto directory", into_file);

    WccResult rm = s.nfs->Remove(s.dir, "b");
    EXPECT_TRUE(rm.ok()) << rm.StatusString();
    s.Note("REMOVE b", rm);
    WccResult rm2 = s.nfs->Remove(s.dir, "b");
    EXPECT_EQ(rm2.status, kNfs3ErrNoent) << rm2.StatusString();
    s.Note("REMOVE b again", rm2);
    GetattrResult g = s.nfs->Getattr(c.fh);  // sub/c, still linked once.
    s.NoteAttr("GETATTR sub/c", g, g.attr);
    ReaddirResult left = s.nfs->ReaddirAll(s.dir, false);
    s.Note("READDIR after", left, Names(left.entries));
  });
}

TEST_F(ConformanceTest, ReaddirManyPages) {
  constexpr int kFiles = 300;
  RunOnBoth([&](Side& s) {
    CreateResult big = s.nfs->Mkdir(s.dir, "big", Sattr());
    ASSERT_TRUE(big.ok()) << big.StatusString();
    std::set<std::string> expected = {".", ".."};
    for (int i = 0; i < kFiles; ++i) {
      char name[32];
      std::snprintf(name, sizeof(name), "entry-%03d-with-a-longer-name", i);
      expected.insert(name);
      CreateResult c = (i % 10 == 0) ? s.nfs->Mkdir(big.fh, name, Sattr())
                                     : s.nfs->Create(big.fh, name, Sattr());
      ASSERT_TRUE(c.ok()) << name << ": " << c.StatusString();
    }
    ReaddirResult r = s.nfs->ReaddirAll(big.fh, /*plus=*/false, /*count=*/1024);
    EXPECT_TRUE(r.ok()) << r.StatusString() << " " << r.rpc_error;
    EXPECT_GT(r.pages, 3) << "a 1 KiB READDIR must not hold 300 entries";
    std::set<std::string> got;
    for (const DirEntry& e : r.entries)
      EXPECT_TRUE(got.insert(e.name).second) << "twice: " << e.name;
    EXPECT_EQ(got, expected);
    s.Note("READDIR count=1024", r, "entries=" + std::to_string(r.entries.size()));

    ReaddirResult p = s.nfs->ReaddirAll(big.fh, /*plus=*/true, /*count=*/1024);
    EXPECT_TRUE(p.ok()) << p.StatusString() << " " << p.rpc_error;
    EXPECT_GT(p.pages, 3);
    got.clear();
    int dirs = 0;
    for (const DirEntry& e : p.entries) {
      got.insert(e.name);
      if (e.name == "." || e.name == "..") continue;
      EXPECT_TRUE(e.attr.has_value()) << e.name;
      EXPECT_FALSE(e.fh.empty()) << e.name;
      if (e.attr && e.attr->type == static_cast<uint32_t>(FileType::kDir)) ++dirs;
    }
    EXPECT_EQ(got, expected);
    EXPECT_EQ(dirs, kFiles / 10);
    s.Note("READDIRPLUS dircount=1024", p,
           "entries=" + std::to_string(p.entries.size()) + " dirs=" + std::to_string(dirs));
    // A handle from READDIRPLUS is usable.
    for (const DirEntry& e : p.entries) {
      if (e.name != "entry-007-with-a-longer-name") continue;
      GetattrResult g = s.nfs->Getattr(e.fh);
      EXPECT_TRUE(g.ok()) << g.StatusString();
      s.NoteAttr("GETATTR via READDIRPLUS handle", g, g.attr);
    }
    ReaddirResult one = s.nfs->Readdir(big.fh, 0, "", 8192);
    s.Note("READDIR one page of 8 KiB", one, "eof=" + std::to_string(one.eof));
    ReaddirResult file =
        s.nfs->Readdir(s.nfs->Lookup(big.fh, "entry-001-with-a-longer-name").fh, 0, "", 1024);
    EXPECT_EQ(file.status, kNfs3ErrNotdir) << file.StatusString();
    s.Note("READDIR a file", file);
  });
}

TEST_F(ConformanceTest, FsstatFsinfoPathconf) {
  FsinfoResult info[2];
  int i = 0;
  RunOnBoth([&](Side& s) {
    FsstatResult st = s.nfs->Fsstat(s.root);
    EXPECT_TRUE(st.ok()) << st.StatusString();
    EXPECT_GT(st.tbytes, 0u);
    EXPECT_LE(st.fbytes, st.tbytes);
    s.Note("FSSTAT", st,
           "tbytes=" + std::to_string(st.tbytes) + " tfiles=" + std::to_string(st.tfiles) +
               " invarsec=" + std::to_string(st.invarsec));
    FsinfoResult fi = s.nfs->Fsinfo(s.root);
    EXPECT_TRUE(fi.ok()) << fi.StatusString();
    info[i++] = fi;
    s.Note("FSINFO", fi,
           "rtmult=" + std::to_string(fi.rtmult) + " wtmult=" + std::to_string(fi.wtmult) +
               " maxfilesize=" + std::to_string(fi.maxfilesize) +
               " time_delta=" + std::to_string(fi.time_delta.seconds) + "." +
               std::to_string(fi.time_delta.nseconds) +
               " properties=" + std::to_string(fi.properties));
    PathconfResult pc = s.nfs->Pathconf(s.dir);
    EXPECT_TRUE(pc.ok()) << pc.StatusString();
    EXPECT_GE(pc.name_max, 255u);
    s.Note("PATHCONF", pc,
           "linkmax=" + std::to_string(pc.linkmax) + " name_max=" + std::to_string(pc.name_max) +
               " no_trunc=" + std::to_string(pc.no_trunc) +
               " chown_restricted=" + std::to_string(pc.chown_restricted) +
               " case_insensitive=" + std::to_string(pc.case_insensitive) +
               " case_preserving=" + std::to_string(pc.case_preserving));
  });
  // Transfer sizes may be lowered by the proxy, never raised, and must fit
  // the proxy's record limit (else a client obeying them is cut off).
  const FsinfoResult& g = info[0];
  const FsinfoResult& p = info[1];
  EXPECT_GT(p.rtmax, 0u);
  EXPECT_GT(p.wtmax, 0u);
  EXPECT_LE(p.rtmax, g.rtmax);
  EXPECT_LE(p.wtmax, g.wtmax);
  EXPECT_LE(p.rtpref, p.rtmax);
  EXPECT_LE(p.wtpref, p.wtmax);
  EXPECT_LE(p.wtmax + 512, kMaxRecordSize)
      << "nfsedge advertises wtmax=" << p.wtmax << " but accepts records of " << kMaxRecordSize;
  EXPECT_LE(p.rtmax + 512, kMaxRecordSize) << "nfsedge advertises rtmax=" << p.rtmax;
}

TEST_F(ConformanceTest, MountProcedures) {
  RunOnBoth([](Side& s) {
    MntResult m = s.mnt->Mnt(s.export_path);
    EXPECT_TRUE(m.ok()) << MountStatName(m.status) << " " << m.rpc_error;
    EXPECT_FALSE(m.fh.empty());
    EXPECT_NE(std::find(m.auth_flavors.begin(), m.auth_flavors.end(), 1), m.auth_flavors.end())
        << "AUTH_SYS must be offered";
    std::string flavors;
    for (int32_t f : m.auth_flavors) flavors += std::to_string(f) + ",";
    s.Note("MNT export: " + MountStatName(m.status) + " flavors=" + flavors);
    EXPECT_EQ(m.fh, s.root) << "MNT twice gives the same root handle";
    GetattrResult g = s.nfs->Getattr(m.fh);
    EXPECT_EQ(g.attr.type, static_cast<uint32_t>(FileType::kDir));
    s.Note("GETATTR mounted root", g, "type=" + std::to_string(g.attr.type));

    ExportResult ex = s.mnt->Export();
    EXPECT_TRUE(ex.rpc_ok) << ex.rpc_error;
    std::string dirs;
    for (const ExportEntry& e : ex.exports) dirs += e.dir + ",";
    EXPECT_NE(dirs.find(s.export_path + ","), std::string::npos) << dirs;
    s.Note("EXPORT: " + dirs);

    DumpResult dump = s.mnt->Dump();
    EXPECT_TRUE(dump.rpc_ok) << dump.rpc_error;
    for (const MountEntry& e : dump.mounts) {
      std::printf("[%s] DUMP entry: %s %s\n", s.name.c_str(), e.hostname.c_str(),
                  e.directory.c_str());
    }
    s.Note(std::string("DUMP: ") + (dump.rpc_ok ? "ok" : "failed"));
    RpcResult um = s.mnt->Umnt(s.export_path);
    EXPECT_TRUE(um.rpc_ok) << um.rpc_error;
    s.Note(std::string("UMNT: ") + (um.rpc_ok ? "ok" : "failed"));
    RpcResult all = s.mnt->Umntall();
    EXPECT_TRUE(all.rpc_ok) << all.rpc_error;
    s.Note(std::string("UMNTALL: ") + (all.rpc_ok ? "ok" : "failed"));
    // Handles stay valid after UMNT (NFSv3 is stateless).
    GetattrResult after = s.nfs->Getattr(s.dir);
    EXPECT_TRUE(after.ok()) << after.StatusString();
    s.Note("GETATTR after UMNTALL", after);
    MntResult sub = s.mnt->Mnt(s.export_path + "/no-such-dir");
    EXPECT_FALSE(sub.ok());
    s.Note("MNT missing subdirectory: " + (sub.rpc_ok ? MountStatName(sub.status) : "rpc failed"));
  });
}

}  // namespace
}  // namespace nfsedge::itest
