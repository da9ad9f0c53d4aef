#include "tpcrt/Status.h"

#include "gtest/gtest.h"

using tpcrt::Status;

TEST(StatusTest, OkHasNoMessage) {
  Status s = Status::ok();
  EXPECT_TRUE(s.isOk());
  EXPECT_TRUE(s.message().empty());
}

TEST(StatusTest, ContextPrefixesErrors) {
  Status s = Status::error("header length 99 exceeds file size 12");
  Status wrapped = s.withContext("w.safetensors");
  EXPECT_FALSE(wrapped.isOk());
  EXPECT_EQ(wrapped.message(),
            "w.safetensors: header length 99 exceeds file size 12");
  EXPECT_TRUE(Status::ok().withContext("x").isOk());
}
