#include "server/method_roles.h"

#include <google/protobuf/descriptor.h>

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diffusiond {
namespace {

// Every method of every service compiled from proto/ (the list comes from
// proto/CMakeLists.txt) has a rule: a new RPC without its line fails here
// rather than being refused to every caller in production.
TEST(MethodRoles, EveryServedMethodHasARule) {
  const google::protobuf::DescriptorPool* pool = google::protobuf::DescriptorPool::generated_pool();
  int methods = 0;
  for (absl::string_view name : absl::StrSplit(DIFFUSIOND_PROTO_FILES, ',')) {
    const std::string file_name = absl::StrCat(name, ".proto");
    const google::protobuf::FileDescriptor* file = pool->FindFileByName(file_name);
    ASSERT_NE(file, nullptr) << file_name;
    for (int s = 0; s < file->service_count(); ++s) {
      const google::protobuf::ServiceDescriptor* service = file->service(s);
      for (int m = 0; m < service->method_count(); ++m) {
        const std::string path = absl::StrCat("/", service->full_name(), "/", service->method(m)->name());
        EXPECT_TRUE(method_rule(path).has_value()) << path << " has no line in server/method_roles.cc";
        ++methods;
      }
    }
  }
  EXPECT_GE(methods, 15);
}

TEST(MethodRoles, RulesAreUniqueAndOnlyHealthIsOpen) {
  std::set<std::string> seen;
  for (const MethodRule& r : method_rules()) {
    EXPECT_TRUE(seen.insert(std::string(r.path)).second) << r.path;
    EXPECT_EQ(r.open, absl::StartsWith(r.path, "/grpc.health.v1.Health/")) << r.path;
  }
}

TEST(MethodRoles, RolesFollowTheContract) {
  EXPECT_EQ(method_rule("/diffusiond.v1.ModelService/ListModels")->role, Role::kRead);
  EXPECT_EQ(method_rule("/diffusiond.v1.CacheService/GetStats")->role, Role::kRead);
  EXPECT_EQ(method_rule("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")->role, Role::kRead);
  EXPECT_EQ(method_rule("/diffusiond.v1.DenoiseService/Step")->role, Role::kRun);
  EXPECT_EQ(method_rule("/diffusiond.v1.ModelService/AcquireLease")->role, Role::kRun);
  EXPECT_EQ(method_rule("/diffusiond.v1.PipelineService/Generate")->role, Role::kRun);
  EXPECT_EQ(method_rule("/diffusiond.v1.ModelService/LoadModel")->role, Role::kAdmin);
  EXPECT_EQ(method_rule("/diffusiond.v1.ModelService/UnloadModel")->role, Role::kAdmin);
  EXPECT_EQ(method_rule("/diffusiond.v1.CacheService/MakeRoom")->role, Role::kAdmin);
  EXPECT_EQ(method_rule("/diffusiond.v1.ModelService/Nope"), std::nullopt);
  EXPECT_EQ(method_rule("diffusiond.v1.ModelService/ListModels"), std::nullopt);
}

}  // namespace
}  // namespace diffusiond
