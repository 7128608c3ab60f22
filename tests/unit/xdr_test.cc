// XDR round trips through the rpcgen routines, and the error results the
// proxy encodes for every NFSv3 procedure.
#include <gtest/gtest.h>

#include <cstring>

#include "proxy/nfs_procs.h"
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
