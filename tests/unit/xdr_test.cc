// XDR round trips through the rpcgen routines, and the error results the
// proxy encodes for every NFSv3 procedure.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "proxy/nfs_procs.h"
#include "rpc/xdr/mount3.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {
namespace {

TEST(Xdr, WriteArgsRoundTrip) {
  char fh[] = "0123456789abcdef";
  std::string payload(70000, 'z');
  WRITE3args a{};
  a.file.data.data_len = 16;
  a.file.data.data_val = fh;
  a.offset = 1ull << 40;
  a.count = static_cast<count3>(payload.size());
  a.stable = FILE_SYNC;
  a.data.data_len = static_cast<u_int>(payload.size());
  a.data.data_val = payload.data();
  std::string wire;
  ASSERT_TRUE(XdrEncode(reinterpret_cast<xdrproc_t>(xdr_WRITE3args), &a, &wire));
  EXPECT_EQ(wire.size(), 4 + 16 + 8 + 4 + 4 + 4 + payload.size());

  XdrValue<WRITE3args> b(reinterpret_cast<xdrproc_t>(xdr_WRITE3args));
  ASSERT_TRUE(b.Decode(wire));
  EXPECT_EQ(std::string(b->file.data.data_val, b->file.data.data_len), "0123456789abcdef");
  EXPECT_EQ(b->offset, 1ull << 40);
  EXPECT_EQ(b->stable, FILE_SYNC);
  EXPECT_EQ(std::string(b->data.data_val, b->data.data_len), payload);
}

TEST(Xdr, TruncatedArgsDoNotDecode) {
  LOOKUP3args a{};
  char fh[8] = "handle!";
  char name[] = "file.txt";
  a.what.dir.data.data_len = 8;
  a.what.dir.data.data_val = fh;
  a.what.name = name;
  std::string wire;
  ASSERT_TRUE(XdrEncode(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3args), &a, &wire));
  for (size_t n = 0; n < wire.size(); ++n) {
    XdrValue<LOOKUP3args> b(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3args));
    EXPECT_FALSE(b.Decode(std::string_view(wire).substr(0, n))) << n;
  }
}

// A name with a NUL inside is one name to the upstream (counted bytes) and
// another to the C code that reads it: it does not decode.
TEST(Xdr, ANameWithANulInsideDoesNotDecode) {
  for (const std::string& name : {std::string("foo\0x", 5), std::string("foo\0", 4)}) {
    std::string wire;
    XdrWriter w(&wire);
    w.WriteOpaque("handle!!");
    w.WriteOpaque(name);
    XdrValue<LOOKUP3args> b(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3args));
    EXPECT_FALSE(b.Decode(wire)) << name.size();
  }
  std::string wire;
  XdrWriter w(&wire);
  w.WriteOpaque("handle!!");
  w.WriteOpaque("foo.x");
  XdrValue<LOOKUP3args> b(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3args));
  ASSERT_TRUE(b.Decode(wire));
  EXPECT_STREQ(b->what.name, "foo.x");
}

// A name is one component of a path: with a '/' it does not decode, in
// the arguments of every procedure that takes one (diropargs3).
TEST(Xdr, ANameWithASlashDoesNotDecode) {
  for (const char* name : {"../x", "a/b", "/", "x/"}) {
    std::string wire;
    XdrWriter w(&wire);
    w.WriteOpaque("handle!!");
    w.WriteOpaque(name);
    XdrValue<LOOKUP3args> b(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3args));
    EXPECT_FALSE(b.Decode(wire)) << name;
    XdrValue<REMOVE3args> r(reinterpret_cast<xdrproc_t>(xdr_REMOVE3args));
    EXPECT_FALSE(r.Decode(wire)) << name;
  }
  // A symlink's target is a path: a '/' in it is the point.
  SYMLINK3args a{};
  char fh[9] = "handle!!";
  char name[] = "link";
  char target[] = "../a/b";
  a.where.dir.data.data_len = 8;
  a.where.dir.data.data_val = fh;
  a.where.name = name;
  a.symlink.symlink_data = target;
  std::string wire;
  ASSERT_TRUE(XdrEncode(reinterpret_cast<xdrproc_t>(xdr_SYMLINK3args), &a, &wire));
  XdrValue<SYMLINK3args> b(reinterpret_cast<xdrproc_t>(xdr_SYMLINK3args));
  ASSERT_TRUE(b.Decode(wire));
  EXPECT_STREQ(b->symlink.symlink_data, "../a/b");
}

TEST(Xdr, HandleLongerThanSixtyFourBytesDoesNotDecode) {
  std::string wire;
  XdrWriter w(&wire);
  w.WriteOpaque(std::string(65, 'h'));
  XdrValue<GETATTR3args> b(reinterpret_cast<xdrproc_t>(xdr_GETATTR3args));
  EXPECT_FALSE(b.Decode(wire));
}

TEST(Xdr, ReaddirplusResultsRoundTrip) {
  READDIRPLUS3res res{};
  res.status = NFS3_OK;
  entryplus3 e[3]{};
  char names[3][8] = {"a", "bb", "ccc"};
  char fhs[3][4] = {"fh0", "fh1", "fh2"};
  for (int i = 0; i < 3; ++i) {
    e[i].fileid = 100 + i;
    e[i].name = names[i];
    e[i].cookie = i + 1;
    e[i].name_handle.handle_follows = TRUE;
    e[i].name_handle.post_op_fh3_u.handle.data.data_len = 3;
    e[i].name_handle.post_op_fh3_u.handle.data.data_val = fhs[i];
    e[i].nextentry = i < 2 ? &e[i + 1] : nullptr;
  }
  res.READDIRPLUS3res_u.resok.reply.entries = &e[0];
  res.READDIRPLUS3res_u.resok.reply.eof = TRUE;
  std::string wire;
  ASSERT_TRUE(XdrEncode(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res), &res, &wire));

  const NfsProc* p = FindNfsProc(NFSPROC3_READDIRPLUS);
  XdrBox box(p->res_xdr, p->res_size);
  ASSERT_TRUE(box.Decode(wire));
  std::vector<const nfs_fh3*> handles;
  p->result_handles(box.get(), &handles);
  ASSERT_EQ(handles.size(), 3u);
  EXPECT_EQ(std::string(handles[2]->data.data_val, handles[2]->data.data_len), "fh2");
}

// A directory list is decoded, encoded and freed in constant stack: a
// recursive decoder (one xdr_pointer frame per entry) overflows an 8 MiB
// stack near 55,000 entries (docs/robustness.md, F1).
TEST(Xdr, LongDirectoryListsDoNotRecurse) {
  constexpr size_t kEntries = 300000;
  std::vector<entry3> e(kEntries);
  char name[] = "n";
  for (size_t i = 0; i < kEntries; ++i) {
    e[i].fileid = i;
    e[i].name = name;
    e[i].cookie = i + 1;
    e[i].nextentry = i + 1 < kEntries ? &e[i + 1] : nullptr;
  }
  READDIR3res res{};
  res.status = NFS3_OK;
  res.READDIR3res_u.resok.reply.entries = &e[0];
  res.READDIR3res_u.resok.reply.eof = TRUE;
  std::string wire;
  ASSERT_TRUE(XdrEncode(reinterpret_cast<xdrproc_t>(xdr_READDIR3res), &res, &wire));
  // status, no dir attributes, verifier; per entry: follows, fileid, name
  // (length + 4 padded bytes), cookie; end of list, eof.
  EXPECT_EQ(wire.size(), 4 + 4 + 8 + kEntries * (4 + 8 + 8 + 8) + 4 + 4);

  XdrValue<READDIR3res> back(reinterpret_cast<xdrproc_t>(xdr_READDIR3res));
  ASSERT_TRUE(back.Decode(wire));
  size_t n = 0;
  uint64_t last_cookie = 0;
  for (entry3* p = back->READDIR3res_u.resok.reply.entries; p; p = p->nextentry, ++n) {
    last_cookie = p->cookie;
  }
  EXPECT_EQ(n, kEntries);
  EXPECT_EQ(last_cookie, kEntries);
  EXPECT_TRUE(back->READDIR3res_u.resok.reply.eof);

  std::vector<entryplus3> ep(kEntries);
  for (size_t i = 0; i < kEntries; ++i) {
    ep[i].fileid = i;
    ep[i].name = name;
    ep[i].cookie = i + 1;
    ep[i].nextentry = i + 1 < kEntries ? &ep[i + 1] : nullptr;
  }
  READDIRPLUS3res plus{};
  plus.status = NFS3_OK;
  plus.READDIRPLUS3res_u.resok.reply.entries = &ep[0];
  wire.clear();
  ASSERT_TRUE(XdrEncode(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res), &plus, &wire));
  const NfsProc* p = FindNfsProc(NFSPROC3_READDIRPLUS);
  XdrBox box(p->res_xdr, p->res_size);  // frees the list on destruction
  ASSERT_TRUE(box.Decode(wire));
}

// A list cut short is an error, and what was decoded is freed (no leak under
// the sanitizers).
TEST(Xdr, TruncatedDirectoryListDoesNotDecode) {
  entry3 e[2]{};
  char name[] = "abc";
  e[0].name = e[1].name = name;
  e[0].nextentry = &e[1];
  READDIR3res res{};
  res.READDIR3res_u.resok.reply.entries = &e[0];
  std::string wire;
  ASSERT_TRUE(XdrEncode(reinterpret_cast<xdrproc_t>(xdr_READDIR3res), &res, &wire));
  for (size_t n = 0; n + 4 < wire.size(); n += 4) {
    XdrValue<READDIR3res> b(reinterpret_cast<xdrproc_t>(xdr_READDIR3res));
    EXPECT_FALSE(b.Decode(std::string_view(wire).substr(0, n))) << n;
  }
}

// A length the rest of the input cannot hold is refused before anything is
// allocated (F2): names, paths, opaque data and arrays.
TEST(Xdr, LengthsLongerThanTheInputDoNotDecode) {
  auto lookup = [](uint32_t claimed, size_t present) {
    std::string wire;
    XdrWriter w(&wire);
    w.WriteOpaque("fh");
    w.WriteU32(claimed);
    wire.append(present, 'x');
    XdrValue<LOOKUP3args> b(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3args));
    return b.Decode(wire);
  };
  EXPECT_TRUE(lookup(3, 4));
  EXPECT_TRUE(lookup(8, 8));
  EXPECT_FALSE(lookup(9, 8));
  EXPECT_FALSE(lookup(0xfffffff0u, 8));

  std::string write_args;
  XdrWriter w(&write_args);
  w.WriteOpaque("fh");
  w.WriteU64(0);
  w.WriteU32(0xffffffffu);
  w.WriteU32(UNSTABLE);
  w.WriteU32(0xfffffff0u);  // data length
  XdrValue<WRITE3args> b(reinterpret_cast<xdrproc_t>(xdr_WRITE3args));
  EXPECT_FALSE(b.Decode(write_args));

  std::string mnt;
  XdrWriter m(&mnt);
  m.WriteU32(MNT3_OK);
  m.WriteOpaque("fh");
  m.WriteU32(0x3fffffffu);  // auth_flavors count
  m.WriteU32(1);
  XdrValue<mountres3> r(reinterpret_cast<xdrproc_t>(xdr_mountres3));
  EXPECT_FALSE(r.Decode(mnt));
}

// An enum value outside the enum's range never decodes (F5), so C++ code
// never loads one.
TEST(Xdr, OutOfRangeEnumsDoNotDecode) {
  auto getattr = [](uint32_t status, uint32_t type) {
    GETATTR3res res{};
    res.status = NFS3_OK;
    res.GETATTR3res_u.resok.obj_attributes.type = NF3REG;
    std::string wire;
    EXPECT_TRUE(XdrEncode(reinterpret_cast<xdrproc_t>(xdr_GETATTR3res), &res, &wire));
    StoreBE32(wire.data(), status);
    StoreBE32(wire.data() + 4, type);
    XdrValue<GETATTR3res> b(reinterpret_cast<xdrproc_t>(xdr_GETATTR3res));
    return b.Decode(wire);
  };
  EXPECT_TRUE(getattr(NFS3_OK, NF3FIFO));
  EXPECT_FALSE(getattr(NFS3_OK, 0));
  EXPECT_FALSE(getattr(NFS3_OK, 8));
  EXPECT_FALSE(getattr(NFS3_OK, 0x80000000u));
  EXPECT_FALSE(getattr(10009, NF3REG));

  std::string how;
  XdrWriter w(&how);
  w.WriteOpaque("fh");
  w.WriteOpaque("name");
  w.WriteU32(3);  // createmode3: UNCHECKED, GUARDED, EXCLUSIVE only
  XdrValue<CREATE3args> c(reinterpret_cast<xdrproc_t>(xdr_CREATE3args));
  EXPECT_FALSE(c.Decode(how));
}

TEST(NfsProcs, TableCoversAllProceduresInOrder) {
  for (uint32_t i = 0; i < kNfsProcCount; ++i) {
    const NfsProc* p = FindNfsProc(i);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->proc, i);
    if (i > 0) {
      EXPECT_NE(p->arg_handles, nullptr) << p->name;
    }
  }
  EXPECT_EQ(FindNfsProc(kNfsProcCount), nullptr);
  EXPECT_TRUE(FindNfsProc(NFSPROC3_REMOVE)->flags & kMutating);
  EXPECT_FALSE(FindNfsProc(NFSPROC3_REMOVE)->flags & kIdempotent);
  EXPECT_FALSE(FindNfsProc(NFSPROC3_READ)->flags & kMutating);
  EXPECT_FALSE(FindNfsProc(NFSPROC3_COMMIT)->flags & kMutating);
}

TEST(NfsProcs, OnlyCallsThatChangeNothingOrCommitAreSafeToRepeatUpstream) {
  for (uint32_t proc : {NFSPROC3_NULL, NFSPROC3_GETATTR, NFSPROC3_LOOKUP, NFSPROC3_ACCESS,
                        NFSPROC3_READLINK, NFSPROC3_READ, NFSPROC3_READDIR,
                        NFSPROC3_READDIRPLUS, NFSPROC3_FSSTAT, NFSPROC3_FSINFO,
                        NFSPROC3_PATHCONF, NFSPROC3_COMMIT}) {
    EXPECT_TRUE(NfsProcSafeToRepeat(proc)) << FindNfsProc(proc)->name;
  }
  for (uint32_t proc : {NFSPROC3_SETATTR, NFSPROC3_WRITE, NFSPROC3_CREATE, NFSPROC3_MKDIR,
                        NFSPROC3_SYMLINK, NFSPROC3_MKNOD, NFSPROC3_REMOVE, NFSPROC3_RMDIR,
                        NFSPROC3_RENAME, NFSPROC3_LINK}) {
    EXPECT_FALSE(NfsProcSafeToRepeat(proc)) << FindNfsProc(proc)->name;
  }
  EXPECT_FALSE(NfsProcSafeToRepeat(kNfsProcCount));
}

TEST(NfsProcs, ErrorResultsDecodeWithTheirStatusForEveryProcedure) {
  for (uint32_t i = 1; i < kNfsProcCount; ++i) {
    const NfsProc* p = FindNfsProc(i);
    std::string wire = EncodeNfsError(*p, NFS3ERR_STALE);
    ASSERT_GE(wire.size(), 4u) << p->name;
    EXPECT_EQ(LoadBE32(wire.data()), static_cast<uint32_t>(NFS3ERR_STALE)) << p->name;
    XdrBox box(p->res_xdr, p->res_size);
    ASSERT_TRUE(box.Decode(wire)) << p->name;
    nfsstat3 status;
    std::memcpy(&status, box.get(), sizeof(status));
    EXPECT_EQ(status, NFS3ERR_STALE) << p->name;
  }
  // No attributes follow: GETATTR failure is the status alone; WRITE's
  // wcc_data is two FALSE discriminants.
  EXPECT_EQ(EncodeNfsError(*FindNfsProc(NFSPROC3_GETATTR), NFS3ERR_IO).size(), 4u);
  EXPECT_EQ(EncodeNfsError(*FindNfsProc(NFSPROC3_WRITE), NFS3ERR_IO).size(), 12u);
  EXPECT_EQ(EncodeNfsError(*FindNfsProc(NFSPROC3_RENAME), NFS3ERR_IO).size(), 20u);
}

}  // namespace
}  // namespace nfsedge
