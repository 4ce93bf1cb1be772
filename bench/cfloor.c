/* The hop with no Python in it: a measuring stick for bench/cfloor.py, never to be served.

   Given an upgraded WebSocket (fd SOCK) and the pipes of a sandboxed server (fd TO_SERVER for its
   stdin, FROM_SERVER for its stdout), it copies each text message to the server as a line and each
   line back as a text frame, with one poll() loop and no checks. It speaks only as much WebSocket
   as the benchmark's client uses: whole masked frames from the client, text and close (RFC 6455,
   section 5.2). It ends at a close frame or at either side's end.

   Usage: cfloor SOCK TO_SERVER FROM_SERVER */

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

struct buffer {
    unsigned char *data;
    size_t used, size;
};

static void need(struct buffer *b, size_t more) {
    if (b->used + more <= b->size)
        return;
    size_t size = b->size ? b->size : 65536;
    while (size < b->used + more)
        size *= 2;
    b->data = realloc(b->data, size);
    if (!b->data) {
        perror("cfloor: realloc");
        exit(2);
    }
    b->size = size;
}

static void consume(struct buffer *b, size_t n) {
    memmove(b->data, b->data + n, b->used - n);
    b->used -= n;
}

/* Write every byte of iov to a non-blocking fd (its flags are shared with the Python process that
   opened it), waiting in poll() whenever the kernel's buffer is full. */
static int write_all(int fd, struct iovec *iov, int count) {
    while (count > 0) {
        ssize_t n = writev(fd, iov, count);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN)
                return -1;
            struct pollfd out = {.fd = fd, .events = POLLOUT};
            poll(&out, 1, -1);
            continue;
        }
        while (count > 0 && (size_t)n >= iov->iov_len) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            count--;
        }
        if (count > 0) {
            iov->iov_base = (char *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
        }
    }
    return 0;
}

/* A server's frame: FIN, the opcode, the length in the shortest form; never masked. */
static int send_frame(int sock, int opcode, unsigned char *payload, size_t size) {
    unsigned char head[10];
    size_t at = 2;
    head[0] = (unsigned char)(0x80 | opcode);
    if (size < 126) {
        head[1] = (unsigned char)size;
    } else if (size < 65536) {
        head[1] = 126;
        head[2] = (unsigned char)(size >> 8);
        head[3] = (unsigned char)size;
        at = 4;
    } else {
        head[1] = 127;
        for (int i = 0; i < 8; i++)
            head[2 + i] = (unsigned char)((uint64_t)size >> (56 - 8 * i));
        at = 10;
    }
    struct iovec iov[2] = {{head, at}, {payload, size}};
    return write_all(sock, iov, 2);
}

/* Every whole frame in the client's buffer: 1 to go on, 0 at a close, -1 when a side is gone. */
static int from_client(struct buffer *in, int sock, int to_server) {
    while (in->used >= 2) {
        unsigned char *p = in->data;
        uint64_t size = p[1] & 0x7F;
        size_t at = 2;
        if (size == 126) {
            if (in->used < 4)
                return 1;
            size = ((uint64_t)p[2] << 8) | p[3];
            at = 4;
        } else if (size == 127) {
            if (in->used < 10)
                return 1;
            size = 0;
            for (int i = 0; i < 8; i++)
                size = (size << 8) | p[2 + i];
            at = 10;
        }
        if (size > ((uint64_t)1 << 32))
            return -1; /* no client of the benchmark's sends that: end rather than overflow */
        if (in->used < at + 4 + size)
            return 1; /* the rest of this frame is still on its way */
        unsigned char *mask = p + at, *payload = p + at + 4;
        for (uint64_t i = 0; i < size; i++)
            payload[i] ^= mask[i & 3];
        int opcode = p[0] & 0x0F;
        if (opcode == 0x1) {
            struct iovec iov[2] = {{payload, size}, {"\n", 1}};
            if (write_all(to_server, iov, 2) < 0)
                return -1;
        } else if (opcode == 0x8) {
            send_frame(sock, 0x8, payload, size);
            return 0;
        }
        consume(in, at + 4 + size);
    }
    return 1;
}

/* Every whole line from the server, each as a text frame. */
static int from_server(struct buffer *out, int sock) {
    size_t start = 0;
    for (;;) {
        unsigned char *end = memchr(out->data + start, '\n', out->used - start);
        if (!end)
            break;
        size_t size = (size_t)(end - (out->data + start));
        if (send_frame(sock, 0x1, out->data + start, size) < 0)
            return -1;
        start += size + 1;
    }
    consume(out, start);
    return 1;
}

static int fill(int fd, struct buffer *b) {
    need(b, 65536);
    ssize_t n = read(fd, b->data + b->used, b->size - b->used);
    if (n < 0)
        return (errno == EAGAIN || errno == EINTR) ? 1 : -1;
    if (n == 0)
        return -1;
    b->used += (size_t)n;
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: cfloor SOCK TO_SERVER FROM_SERVER\n");
        return 2;
    }
    int sock = atoi(argv[1]), to_server = atoi(argv[2]), from_server_fd = atoi(argv[3]);
    struct buffer in = {0}, out = {0};
    struct pollfd fds[2] = {{.fd = sock, .events = POLLIN}, {.fd = from_server_fd, .events = POLLIN}};
    for (;;) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (fds[0].revents) {
            if (fill(sock, &in) < 0)
                return 0;
            int going = from_client(&in, sock, to_server);
            if (going <= 0)
                return 0;
        }
        if (fds[1].revents) {
            if (fill(from_server_fd, &out) < 0 || from_server(&out, sock) < 0)
                return 0;
        }
    }
}
