// MetricsServer: /metrics over a small HTTP/1.1 responder of our own.
//
// Why not prometheus-cpp's Exposer: it embeds civetweb, whose server fails to
// start ("null context when constructing CivetServer") in any process that
// also links Debian's libtorch (its dependency tree changes the process
// before civetweb initialises); reproduced with a ten-line program. Scrapes
// are one small GET every few seconds, so a single-threaded responder with
// per-connection timeouts is all the endpoint needs. prometheus-cpp still
// provides the metric model and the text format.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/metrics.h"

namespace diffusiond {
namespace {

constexpr size_t kMaxRequestBytes = 8192;
constexpr int kClientTimeoutMs = 5000;

// "host:port", "[v6]:port" or ":port" (all interfaces).
absl::Status split_address(const std::string& address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  int number = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &number) || number < 0 ||
      number > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("'", address, "' is not host:port"));
  }
  *host = address.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  *port = address.substr(colon + 1);
  return absl::OkStatus();
}

bool write_all(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string response(absl::string_view status, absl::string_view content_type, absl::string_view body,
                     bool head_only) {
  return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", content_type, "\r\nContent-Length: ", body.size(),
                      "\r\nConnection: close\r\n\r\n", head_only ? "" : body);
}

class HttpMetricsServer final : public MetricsServer {
 public:
  HttpMetricsServer(const DaemonMetrics& metrics, int listen_fd, int port)
      : metrics_(metrics), listen_fd_(listen_fd), port_(port) {
    if (::pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
    thread_ = std::thread([this] { serve(); });
  }
  ~HttpMetricsServer() override {
    if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
    thread_.join();
    ::close(listen_fd_);
    if (wake_[0] >= 0) ::close(wake_[0]);
    if (wake_[1] >= 0) ::close(wake_[1]);
  }
  int port() const override { return port_; }

 private:
  void serve() {
    for (;;) {
      pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      if (::poll(fds, wake_[0] >= 0 ? 2 : 1, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents != 0) return;
      const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      handle(client);
      ::close(client);
    }
  }

  // One deadline for the whole request, so a client trickling bytes cannot
  // hold the only responder thread (or the shutdown) for longer.
  void handle(int client) {
    const timeval send_timeout{kClientTimeoutMs / 1000, 0};
    ::setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
    const absl::Time deadline = absl::Now() + absl::Milliseconds(kClientTimeoutMs);
    std::string request;
    char buffer[1024];
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < kMaxRequestBytes) {
      const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
      pollfd fds[2] = {{client, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      if (left_ms <= 0 || ::poll(fds, wake_[0] >= 0 ? 2 : 1, static_cast<int>(left_ms)) <= 0 ||
          fds[1].revents != 0) {
        return;
      }
      const ssize_t n = ::recv(client, buffer, sizeof(buffer), 0);
      if (n <= 0) return;
      request.append(buffer, static_cast<size_t>(n));
    }
    const std::vector<std::string> line = absl::StrSplit(request.substr(0, request.find("\r\n")), ' ');
    const bool head = !line.empty() && line[0] == "HEAD";
    if (line.size() != 3 || (line[0] != "GET" && !head)) {
      write_all(client, response("405 Method Not Allowed", "text/plain", "GET /metrics\n", false));
      return;
    }
    const absl::string_view path = absl::string_view(line[1]).substr(0, line[1].find('?'));
    if (path != "/metrics") {
      write_all(client, response("404 Not Found", "text/plain", "metrics are at /metrics\n", head));
      return;
    }
    write_all(client, response("200 OK", "text/plain; version=0.0.4; charset=utf-8", metrics_.scrape_text(), head));
  }

  const DaemonMetrics& metrics_;
  const int listen_fd_;
  const int port_;
  int wake_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& address,
                                                                    const DaemonMetrics& metrics) {
  std::string host, port;
  if (absl::Status s = split_address(address, &host, &port); !s.ok()) return s;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on '", address, "': ", ::gai_strerror(rc)));
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 64) == 0) {
      sockaddr_storage bound{};
      socklen_t len = sizeof(bound);
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      const int bound_port = ntohs(bound.ss_family == AF_INET6
                                       ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                       : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      ::freeaddrinfo(found);
      return std::make_unique<HttpMetricsServer>(metrics, fd, bound_port);
    }
    error = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return absl::UnavailableError(absl::StrCat("cannot serve metrics on '", address, "': ", error));
}

}  // namespace diffusiond
