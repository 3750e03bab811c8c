// MetricsServer: /metrics over a small HTTP/1.1 responder of our own.
//
// Why not prometheus-cpp's Exposer: it embeds civetweb, whose server fails to
// start ("null context when constructing CivetServer") in any process that
// also links Debian's libtorch (its dependency tree changes the process
// before civetweb initialises); reproduced with a ten-line program. Scrapes
// are one small GET every few seconds, so one thread multiplexing
// non-blocking connections with poll(2) is all the endpoint needs: no client
// can delay another's scrape, however idle or slow it is, because no read or
// write ever waits on one connection. Connections are bounded in number and
// in time. prometheus-cpp still provides the metric model and the text
// format.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

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
// A client has this long to send its request, and as long again to take
// the response; then it is dropped.
constexpr absl::Duration kClientTimeout = absl::Seconds(2);
// Open connections at most; a new one beyond this displaces the oldest.
constexpr size_t kMaxConnections = 32;

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
    // Accepts drain the backlog until EAGAIN.
    ::fcntl(listen_fd_, F_SETFL, ::fcntl(listen_fd_, F_GETFL) | O_NONBLOCK);
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
  // One client: its request as read so far, then its response as left to
  // send.
  struct Connection {
    int fd;
    absl::Time deadline;
    std::string request;
    std::string reply;  // empty while the request is being read
    size_t sent = 0;
  };

  void serve() {
    std::vector<Connection> clients;
    for (;;) {
      const absl::Time now = absl::Now();
      // Drop the expired, and wait no longer than the next expiry.
      for (const Connection& c : clients) {
        if (c.deadline <= now) ::close(c.fd);
      }
      clients.erase(std::remove_if(clients.begin(), clients.end(),
                                   [&](const Connection& c) { return c.deadline <= now; }),
                    clients.end());
      absl::Duration wait = absl::InfiniteDuration();
      std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      for (const Connection& c : clients) {
        wait = std::min(wait, c.deadline - now);
        fds.push_back({c.fd, static_cast<short>(c.reply.empty() ? POLLIN : POLLOUT), 0});
      }
      const int timeout_ms =
          wait == absl::InfiniteDuration() ? -1 : static_cast<int>(absl::ToInt64Milliseconds(wait) + 1);
      if (::poll(fds.data(), fds.size(), timeout_ms) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[1].revents != 0) break;
      // Connections first (fds[2..] match `clients` as it was), then accepts.
      std::vector<Connection> kept;
      for (size_t i = 0; i < clients.size(); ++i) {
        if (fds[i + 2].revents == 0 || progress(&clients[i])) {
          kept.push_back(std::move(clients[i]));
        } else {
          ::close(clients[i].fd);
        }
      }
      clients = std::move(kept);
      if (fds[0].revents != 0) accept_all(&clients);
    }
    for (const Connection& c : clients) ::close(c.fd);
  }

  // Accepts every pending connection, displacing the oldest beyond
  // kMaxConnections.
  void accept_all(std::vector<Connection>* clients) {
    for (;;) {
      const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (client < 0) return;
      if (clients->size() >= kMaxConnections) {
        auto oldest = std::min_element(clients->begin(), clients->end(), [](const Connection& a, const Connection& b) {
          return a.deadline < b.deadline;
        });
        ::close(oldest->fd);
        clients->erase(oldest);
      }
      clients->push_back(Connection{client, absl::Now() + kClientTimeout, {}, {}, 0});
    }
  }

  // Reads what the client sent or sends what it can take, without
  // blocking. Returns false when the connection is done or broken.
  bool progress(Connection* c) {
    if (c->reply.empty()) {
      char buffer[1024];
      const ssize_t n = ::recv(c->fd, buffer, sizeof(buffer), 0);
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      if (n == 0) return false;
      c->request.append(buffer, static_cast<size_t>(n));
      if (c->request.find("\r\n\r\n") == std::string::npos && c->request.size() < kMaxRequestBytes) return true;
      c->reply = answer(c->request);
      c->deadline = absl::Now() + kClientTimeout;
    }
    const ssize_t n = ::send(c->fd, c->reply.data() + c->sent, c->reply.size() - c->sent, MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    c->sent += static_cast<size_t>(n);
    return c->sent < c->reply.size();
  }

  // The whole HTTP response to `request`.
  std::string answer(const std::string& request) const {
    const std::vector<std::string> line = absl::StrSplit(request.substr(0, request.find("\r\n")), ' ');
    const bool head = !line.empty() && line[0] == "HEAD";
    if (line.size() != 3 || (line[0] != "GET" && !head)) {
      return response("405 Method Not Allowed", "text/plain", "GET /metrics\n", false);
    }
    const absl::string_view path = absl::string_view(line[1]).substr(0, line[1].find('?'));
    if (path != "/metrics") return response("404 Not Found", "text/plain", "metrics are at /metrics\n", head);
    return response("200 OK", "text/plain; version=0.0.4; charset=utf-8", metrics_.scrape_text(), head);
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
