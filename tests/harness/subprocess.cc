#include "harness/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "harness/files.h"

extern char** environ;

namespace nfsedge::harness {

std::string ExitStatus::ToString() const {
  if (exited) return "exit code " + std::to_string(code);
  return std::string("killed by signal ") + std::to_string(signal) + " (" + strsignal(signal) + ")";
}

namespace {

ExitStatus FromWaitStatus(int ws) {
  ExitStatus s;
  if (WIFEXITED(ws)) {
    s.exited = true;
    s.code = WEXITSTATUS(ws);
  } else if (WIFSIGNALED(ws)) {
    s.signal = WTERMSIG(ws);
  }
  return s;
}

// Runs in the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void ExecChild(pid_t parent, int log_fd, int err_fd, char* const* argv,
                            char* const* envp) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // The parent died before prctl.
  signal(SIGPIPE, SIG_DFL);             // Ignored dispositions survive exec.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, 0);
  dup2(log_fd, 1);
  dup2(log_fd, 2);
  // Every other descriptor (test sockets, the parent's logs) closes at exec;
  // err_fd too, which tells the parent that exec succeeded.
  syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
  execve(argv[0], argv, envp);
  int err = errno;
  ssize_t ignored = write(err_fd, &err, sizeof(err));
  (void)ignored;
  _exit(127);
}

}  // namespace

StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(const Options& options) {
  if (options.argv.empty()) return Status::Error("Subprocess: empty argv");
  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  // An extra entry replaces the inherited one of the same name (getenv and
  // the loader take the first).
  auto overridden = [&](const char* entry) {
    for (const auto& e : options.env) {
      size_t eq = e.find('=');
      if (eq != std::string::npos && std::strncmp(entry, e.c_str(), eq + 1) == 0) return true;
    }
    return false;
  };
  for (char** e = environ; *e; ++e) {
    if (!overridden(*e)) env_strings.emplace_back(*e);
  }
  for (const auto& e : options.env) env_strings.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  int log_fd = open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return Status::Error("open " + options.log_path + ": " + std::strerror(errno));
  }
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(log_fd);
    return Status::Error(std::string("pipe2: ") + std::strerror(errno));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) ExecChild(parent, log_fd, err_pipe[1], argv.data(), envp.data());
  int fork_errno = errno;
  close(log_fd);
  close(err_pipe[1]);
  if (pid < 0) {
    close(err_pipe[0]);
    return Status::Error(std::string("fork: ") + std::strerror(fork_errno));
  }
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(err_pipe[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  close(err_pipe[0]);
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  std::unique_ptr<Subprocess> p(new Subprocess(pid, pidfd, options.log_path));
  if (n > 0) {
    p->Reap(/*block=*/true);
    return Status::Error("exec " + options.argv[0] + ": " + std::strerror(child_errno));
  }
  return p;
}

StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(std::vector<std::string> argv,
                                                        std::string log_path) {
  Options o;
  o.argv = std::move(argv);
  o.log_path = std::move(log_path);
  return Start(o);
}

Subprocess::Subprocess(pid_t pid, int pidfd, std::string log_path)
    : pid_(pid), pidfd_(pidfd), log_path_(std::move(log_path)) {}

Subprocess::~Subprocess() {
  Stop();
  if (pidfd_ >= 0) close(pidfd_);
}

std::string Subprocess::LogTail(size_t max_lines) const { return TailOfFile(log_path_, max_lines); }

bool Subprocess::Reap(bool block) {
  if (exit_) return true;
  int ws = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &ws, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    exit_ = FromWaitStatus(ws);
    return true;
  }
  if (r < 0) {  // ECHILD: somebody else reaped it; treat as gone.
    exit_ = ExitStatus{};
    return true;
  }
  return false;
}

bool Subprocess::IsRunning() { return !Reap(/*block=*/false); }

void Subprocess::Signal(int sig) {
  if (IsRunning()) kill(pid_, sig);
}

std::optional<ExitStatus> Subprocess::WaitForExit(Millis timeout) {
  Deadline deadline(timeout);
  while (!Reap(/*block=*/false)) {
    if (deadline.Expired()) return std::nullopt;
    if (pidfd_ >= 0) {
      pollfd pfd{pidfd_, POLLIN, 0};
      poll(&pfd, 1, deadline.PollTimeoutMs());
    } else {
      std::this_thread::sleep_for(std::min(Millis(5), deadline.Remaining()));
    }
  }
  return exit_;
}

ExitStatus Subprocess::Stop(Millis grace) {
  if (!IsRunning()) return *exit_;
  kill(pid_, SIGTERM);
  if (auto s = WaitForExit(grace)) return *s;
  kill(pid_, SIGKILL);
  Reap(/*block=*/true);
  return *exit_;
}

}  // namespace nfsedge::harness
