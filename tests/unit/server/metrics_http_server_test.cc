// MetricsServer under idle and slow clients: connections that send nothing,
// or trickle, or never read, must not delay anyone else's scrape past
// Prometheus's scrape timeout.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics.h"
#include "tests/testing/status_matchers.h"

namespace diffusiond {
namespace {

using ::diffusiond::testing::IsOk;
using ::testing::StartsWith;

// Returns a socket connected to 127.0.0.1:`port` (-1 on failure) that fails
// a read after 5 s instead of hanging the test.
int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Scrapes /metrics on a fresh connection; returns the response.
std::string scrape(int port) {
  const int fd = connect_to(port);
  if (fd < 0) return "";
  const std::string request = "GET /metrics HTTP/1.0\r\n\r\n";
  std::string response;
  if (::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) response.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return response;
}

class MetricsServerClients : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<MetricsServer>> s = MetricsServer::start("127.0.0.1:0", metrics_);
    ASSERT_THAT(s.status(), IsOk());
    server_ = std::move(*s);
  }
  void TearDown() override {
    for (int fd : held_) ::close(fd);
  }
  // Opens `n` connections and keeps them open, silent, until the test ends.
  void hold_idle(int n) {
    for (int i = 0; i < n; ++i) {
      const int fd = connect_to(server_->port());
      ASSERT_GE(fd, 0);
      held_.push_back(fd);
    }
  }

  DaemonMetrics metrics_{BuildInfo{"test", "1.13", false, 1, "glibc", "", "unknown", "none", false}, nullptr};
  std::unique_ptr<MetricsServer> server_;
  std::vector<int> held_;
};

TEST_F(MetricsServerClients, ThreeIdleConnectionsDoNotDelayAScrape) {
  hold_idle(3);
  const absl::Time start = absl::Now();
  EXPECT_THAT(scrape(server_->port()), StartsWith("HTTP/1.1 200"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

TEST_F(MetricsServerClients, ATricklingClientDoesNotDelayAScrape) {
  const int slow = connect_to(server_->port());
  ASSERT_GE(slow, 0);
  held_.push_back(slow);
  ASSERT_EQ(::send(slow, "GET /met", 8, 0), 8);  // and never the rest
  const absl::Time start = absl::Now();
  EXPECT_THAT(scrape(server_->port()), StartsWith("HTTP/1.1 200"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

TEST_F(MetricsServerClients, MoreIdleConnectionsThanItServesDoNotLockScrapesOut) {
  hold_idle(100);
  const absl::Time start = absl::Now();
  EXPECT_THAT(scrape(server_->port()), StartsWith("HTTP/1.1 200"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

TEST_F(MetricsServerClients, AnIdleConnectionIsClosedAfterItsTimeout) {
  hold_idle(1);
  char byte;
  const absl::Time start = absl::Now();
  // recv returns 0 (closed by the server) well before the 5 s socket timeout.
  EXPECT_EQ(::recv(held_[0], &byte, 1, 0), 0);
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));
}

}  // namespace
}  // namespace diffusiond
