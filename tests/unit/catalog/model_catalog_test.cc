// ModelCatalog: what a models directory holds that could be loaded — a
// model folder, a single file, a broken file (listed with why), files that
// are no candidates (not listed), symlinks that escape (neither followed
// nor listed) — planned from headers at FP8 off and e4m3fn; the cache
// plans a candidate again only when its files change; the depth and entry
// limits truncate and say so.
#include "core/catalog/model_catalog.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/random_models/lora_random.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_z_image.h"
#include "tools/random_models/z_image_random.h"

namespace diffusiond {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

const AvailableModel* find_available(const CatalogListing& listing, const std::string& path) {
  for (const AvailableModel& m : listing.models) {
    if (m.path == path) return &m;
  }
  return nullptr;
}

class ModelCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    models_ = dir_.path("models");
    ASSERT_TRUE(write_random_z_image(testing::tiny_z_image_config(), models_ + "/zimage", 7).ok());
    fs::create_directories(models_ + "/nested/deeper");
    fs::copy_file(models_ + "/zimage/diffusion_pytorch_model.safetensors",
                  models_ + "/nested/deeper/single.safetensors");
    dir_.write("models/broken.safetensors", "not a safetensors file");
    dir_.write("models/notes.txt", "not a checkpoint");
    // Outside the models directory: a real checkpoint a symlink points at.
    fs::copy_file(models_ + "/zimage/diffusion_pytorch_model.safetensors", dir_.path("outside.safetensors"));
    fs::create_symlink(dir_.path("outside.safetensors"), models_ + "/escape.safetensors");
    fs::create_directories(dir_.path("outside_folder"));
    fs::create_directory_symlink(dir_.path("outside_folder"), models_ + "/escape_folder");
    fs::create_symlink(models_ + "/nested/deeper/single.safetensors", models_ + "/inside.safetensors");
  }

  CatalogOptions options() const {
    CatalogOptions o;
    o.models_dir = models_;
    return o;
  }

  testing::TempDir dir_;
  std::string models_;
};

// A LoRA file no model recipe takes is listed as an adapter: its layout,
// the architectures its keys map onto, its modules, ranks and targets, and
// the bytes it holds loaded.
TEST_F(ModelCatalogTest, ListsLoraAdaptersWithWhatTheyUpdate) {
  LoraTensors t = peft_lora_module("single_transformer_blocks.0.proj_out", 32, 16, 4, 1);
  const LoraTensors second = peft_lora_module("transformer_blocks.1.ff.net.2", 64, 16, 8, 2);
  t.insert(t.end(), second.begin(), second.end());
  fs::create_directories(models_ + "/loras");
  ASSERT_TRUE(write_lora_file(models_ + "/loras/style.safetensors", t).ok());
  ModelCatalog catalog(options());
  absl::StatusOr<CatalogListing> listing = catalog.list();
  ASSERT_TRUE(listing.ok()) << listing.status();
  const AvailableModel* lora = find_available(*listing, "loras/style.safetensors");
  ASSERT_NE(lora, nullptr);
  EXPECT_THAT(lora->error, IsEmpty());
  EXPECT_EQ(lora->format, AvailableModel::Format::kLora);
  EXPECT_EQ(available_format_name(lora->format), "lora");
  EXPECT_EQ(lora->role, "adapter");
  ASSERT_TRUE(lora->adapter.has_value());
  EXPECT_EQ(lora->adapter->layout, "diffusers");
  EXPECT_THAT(lora->adapter->architectures, ::testing::Contains("flux"));
  EXPECT_THAT(lora->architecture, HasSubstr("flux"));
  EXPECT_EQ(lora->adapter->modules, 2);
  EXPECT_EQ(lora->adapter->min_rank, 4);
  EXPECT_EQ(lora->adapter->max_rank, 8);
  EXPECT_EQ(lora->adapter->targets,
            (std::vector<std::string>{"single_transformer_blocks.0.proj_out", "transformer_blocks.1.ff.net.2"}));
  ASSERT_EQ(lora->sizes.size(), 1u);
  EXPECT_EQ(lora->sizes[0].final_bytes, (4 * (32 + 16) + 8 * (64 + 16)) * 4);
  // A broken file stays a broken file.
  const AvailableModel* broken = find_available(*listing, "broken.safetensors");
  ASSERT_NE(broken, nullptr);
  EXPECT_FALSE(broken->adapter.has_value());
  EXPECT_THAT(broken->error, Not(IsEmpty()));
}

TEST_F(ModelCatalogTest, ListsCandidatesWithTheirPlansAndSkipsWhatIsNotOne) {
  ModelCatalog catalog(options());
  absl::StatusOr<CatalogListing> listing = catalog.list();
  ASSERT_TRUE(listing.ok()) << listing.status();
  EXPECT_FALSE(listing->truncated);

  const AvailableModel* folder = find_available(*listing, "zimage");
  ASSERT_NE(folder, nullptr);
  EXPECT_EQ(folder->format, AvailableModel::Format::kModelFolder);
  EXPECT_EQ(folder->architecture, "z-image");
  EXPECT_EQ(folder->role, "denoiser");
  EXPECT_THAT(folder->error, IsEmpty());
  ASSERT_EQ(folder->sizes.size(), 2u);
  EXPECT_FALSE(folder->sizes[0].fp8.has_value());
  EXPECT_EQ(folder->sizes[0].fp8_tensors, 0);
  ASSERT_TRUE(folder->sizes[1].fp8.has_value());
  EXPECT_EQ(*folder->sizes[1].fp8, Fp8Format::kE4M3Fn);
  EXPECT_GT(folder->sizes[1].fp8_tensors, 0);
  EXPECT_LT(folder->sizes[1].final_bytes, folder->sizes[0].final_bytes);
  EXPECT_GE(folder->sizes[0].reservation_bytes, folder->sizes[0].final_bytes);
  EXPECT_GT(folder->file_bytes, 0);
  EXPECT_GT(folder->tensors, 0);

  const AvailableModel* single = find_available(*listing, "nested/deeper/single.safetensors");
  ASSERT_NE(single, nullptr);
  EXPECT_EQ(single->format, AvailableModel::Format::kSingleFile);
  EXPECT_EQ(single->architecture, "z-image") << single->error;
  // A symlink that stays inside is listed under its own name.
  EXPECT_NE(find_available(*listing, "inside.safetensors"), nullptr);

  const AvailableModel* broken = find_available(*listing, "broken.safetensors");
  ASSERT_NE(broken, nullptr);
  EXPECT_THAT(broken->error, Not(IsEmpty()));
  EXPECT_THAT(broken->sizes, IsEmpty());

  EXPECT_EQ(find_available(*listing, "notes.txt"), nullptr);
  EXPECT_EQ(find_available(*listing, "escape.safetensors"), nullptr);
  for (const AvailableModel& m : listing->models) EXPECT_THAT(m.path, Not(HasSubstr("escape"))) << m.path;
  EXPECT_EQ(listing->models.size(), 4u);
}

TEST_F(ModelCatalogTest, PlansACandidateAgainOnlyWhenItsFilesChange) {
  ModelCatalog catalog(options());
  absl::StatusOr<CatalogListing> first = catalog.list();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->planned, 4);
  absl::StatusOr<CatalogListing> again = catalog.list();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->planned, 0);

  // The folder's config changes (another size, another mtime): only it is
  // planned again, and its listing says what is there now.
  ZImageConfig bigger = testing::tiny_z_image_config(2);
  ASSERT_TRUE(write_random_z_image(bigger, models_ + "/zimage", 8).ok());
  absl::StatusOr<CatalogListing> changed = catalog.list();
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(changed->planned, 1);
  const AvailableModel* before = find_available(*first, "zimage");
  const AvailableModel* after = find_available(*changed, "zimage");
  ASSERT_TRUE(before != nullptr && after != nullptr);
  EXPECT_GT(after->tensors, before->tensors);

  // A file that goes is forgotten.
  fs::remove(models_ + "/broken.safetensors");
  absl::StatusOr<CatalogListing> gone = catalog.list();
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(find_available(*gone, "broken.safetensors"), nullptr);
  EXPECT_EQ(gone->planned, 0);
}

TEST_F(ModelCatalogTest, TheDepthLimitSkipsDeeperFoldersAndSaysSo) {
  CatalogOptions o = options();
  o.max_depth = 1;
  absl::StatusOr<CatalogListing> listing = ModelCatalog(o).list();
  ASSERT_TRUE(listing.ok());
  EXPECT_TRUE(listing->truncated);
  EXPECT_THAT(listing->truncated_reason, HasSubstr("depth limit"));
  EXPECT_EQ(find_available(*listing, "nested/deeper/single.safetensors"), nullptr);
  EXPECT_NE(find_available(*listing, "zimage"), nullptr);
}

TEST_F(ModelCatalogTest, TheEntryLimitStopsTheWalkAndSaysSo) {
  CatalogOptions o = options();
  o.max_entries = 2;
  absl::StatusOr<CatalogListing> listing = ModelCatalog(o).list();
  ASSERT_TRUE(listing.ok());
  EXPECT_TRUE(listing->truncated);
  EXPECT_THAT(listing->truncated_reason, HasSubstr("entry limit"));
  EXPECT_LT(listing->models.size(), 4u);
}

TEST(ModelCatalog, AMissingModelsDirectoryIsAnError) {
  CatalogOptions o;
  o.models_dir = "/nonexistent/models";
  EXPECT_EQ(ModelCatalog(o).list().status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace diffusiond
