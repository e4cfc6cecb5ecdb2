/* The compiled core for text without Han characters, in C: words found, hashed, summed and
 * sketched in one pass.
 *
 * compiled_text.py calls it; see there for what it computes. Loading it costs a process
 * nothing measurable, where numba's first call cost ~0.25-0.55 s, so every batch of such
 * text can use it. It only reads and writes the buffers it is given: it keeps no state
 * between calls, never prints, and releases the GIL while it works.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HEAD_TOKENS 32       /* settings.HEAD_TOKENS */
#define VECTORIZED_MAX 128   /* xxh3.VECTORIZED_MAX: longer words go to the numpy path */
#define LANE_MAX 255         /* fingerprint._LANE_MAX: hashes a byte lane counts before it is emptied */
#define LANE 0x0101010101010101ULL
#define EMPTY 0xFFFF         /* sketch._EMPTY: a bin without shingles */
#define EXACT_MARK 0xAB5DFA9B6D7EAD76ULL /* sketch.EXACT_MARK: an exact sketch's first 8 bytes */
#define EXACT_MOST 61        /* the most shingles an exact sketch of 256 bytes holds */

/* xxh3's default secret (kSecret), its first 128 bytes: all that strings up to 128 bytes read. */
static const uint8_t SECRET[128] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
};

#define PRIME64_1 0x9E3779B185EBCA87ULL
#define PRIME64_2 0xC2B2AE3D27D4EB4FULL
#define PRIME64_3 0x165667B19E3779F9ULL
#define PRIME_MX1 0x165667919E3779F9ULL
#define PRIME_MX2 0x9FB21C651E98DF25ULL
/* sketch._MIX and sketch._FMIX: a shingle's three word hashes combined, then fmix64. */
#define MIX0 0x9E3779B97F4A7C15ULL
#define MIX1 0xC2B2AE3D27D4EB4FULL
#define FMIX0 0xFF51AFD7ED558CCDULL
#define FMIX1 0xC4CEB9FE1A85EC53ULL

static inline uint64_t read64(const uint8_t *p) {
    uint64_t x;
    memcpy(&x, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    x = __builtin_bswap64(x);
#endif
    return x;
}

static inline uint64_t read32(const uint8_t *p) {
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
}

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t mul128_fold64(uint64_t a, uint64_t b) {
    __uint128_t product = (__uint128_t)a * b;
    return (uint64_t)product ^ (uint64_t)(product >> 64);
}

static inline uint64_t avalanche(uint64_t h) {
    h ^= h >> 37;
    h *= PRIME_MX1;
    return h ^ (h >> 32);
}

static inline uint64_t mix16(const uint8_t *p, int secret) {
    return mul128_fold64(read64(p) ^ read64(SECRET + secret), read64(p + 8) ^ read64(SECRET + secret + 8));
}

/* xxh3-64, seed 0, of p[0:n], 1 <= n <= 128 (xxh3.py's length classes). */
static uint64_t xxh3(const uint8_t *p, int64_t n) {
    uint64_t length = (uint64_t)n;
    if (n <= 3) {
        uint64_t c1 = p[0], c2 = p[n >> 1], c3 = p[n - 1];
        uint64_t h = ((c1 << 16) | (c2 << 24) | c3 | (length << 8)) ^ ((read32(SECRET) ^ read32(SECRET + 4)));
        h ^= h >> 33;
        h *= PRIME64_2;
        h ^= h >> 29;
        h *= PRIME64_3;
        return h ^ (h >> 32);
    }
    if (n <= 8) {
        uint64_t h = (read32(p + n - 4) + (read32(p) << 32)) ^ (read64(SECRET + 8) ^ read64(SECRET + 16));
        h ^= rotl64(h, 49) ^ rotl64(h, 24);
        h *= PRIME_MX2;
        h ^= (h >> 35) + length;
        h *= PRIME_MX2;
        return h ^ (h >> 28);
    }
    if (n <= 16) {
        uint64_t lo = read64(p) ^ (read64(SECRET + 24) ^ read64(SECRET + 32));
        uint64_t hi = read64(p + n - 8) ^ (read64(SECRET + 40) ^ read64(SECRET + 48));
        return avalanche(length + __builtin_bswap64(lo) + hi + mul128_fold64(lo, hi));
    }
    uint64_t acc = length * PRIME64_1;
    const uint8_t *end = p + n;
    acc += mix16(p, 0) + mix16(end - 16, 16);
    for (int round = 1; round < 4 && n > 32 * round; round++) /* 32 more bytes a round, from both ends */
        acc += mix16(p + 16 * round, 32 * round) + mix16(end - 16 * round - 16, 32 * round + 16);
    return avalanche(acc);
}

/* low: raw's ASCII bytes case-folded; word_bits: bit i % 64 of word i / 64 is 1 where low[i]
 * is a \w byte, [0-9a-z_], or a byte past ASCII: the core is given UTF-8 in which every
 * character past ASCII is a word character (compiled_text.core_spans puts spaces for the others).
 * Branch-free within each 64 bytes, which the compiler vectorizes. */
static void fold(const uint8_t *raw, int64_t n, uint8_t *low, uint64_t *word_bits) {
    for (int64_t base = 0; base < n; base += 64) {
        int64_t stop = n - base < 64 ? n - base : 64;
        uint8_t is_word[64] = {0};
        for (int64_t j = 0; j < stop; j++) {
            uint8_t c = raw[base + j];
            c += 32 * ((uint8_t)(c - 65) < 26); /* A-Z */
            low[base + j] = c;
            is_word[j] = ((uint8_t)(c - 97) < 26) | ((uint8_t)(c - 48) < 10) | (c == 95) | (c >= 0x80);
        }
        uint64_t x = 0;
        for (int j = 0; j < 8; j++) /* eight bytes of 0 or 1 times this: their bits in the top byte */
            x |= ((read64(is_word + 8 * j) * 0x0102040810204080ULL) >> 56) << (8 * j);
        word_bits[base >> 6] = x;
    }
}

/* Where the words of [start, end) start and end, in order, into `edges` (a word ends where
 * the span does if it is still open there); how many were written. One step per 64 bytes
 * and one per edge, found as the bits where word_bits changes. */
static int64_t word_edges(const uint64_t *word_bits, int64_t start, int64_t end, int64_t *edges) {
    int64_t count = 0;
    uint64_t before = 0; /* the last byte of the 64 before, as a bit */
    for (int64_t base = start & ~(int64_t)63; base < end; base += 64) {
        uint64_t w = word_bits[base >> 6];
        if (base < start)
            w &= ~((1ULL << (start - base)) - 1);
        if (end - base < 64)
            w &= (1ULL << (end - base)) - 1;
        uint64_t changes = w ^ ((w << 1) | before);
        before = w >> 63;
        while (changes) {
            edges[count++] = base + __builtin_ctzll(changes);
            changes &= changes - 1;
        }
    }
    if (count % 2)
        edges[count++] = end;
    return count;
}

/* fingerprint.occurrence_fingerprints of hashes[lo:hi] (hi > lo): bit i is 1 when more than
 * half the hashes have it. Counted in byte lanes: (h >> j) & LANE puts bits j, j + 8, ... in
 * the bytes of one word, emptied into `ones` every LANE_MAX hashes. */
static uint64_t fingerprint(const uint64_t *hashes, int64_t lo, int64_t hi) {
    int64_t ones[64] = {0};
    for (int64_t start = lo; start < hi; start += LANE_MAX) {
        uint64_t lanes[8] = {0};
        int64_t stop = hi - start < LANE_MAX ? hi : start + LANE_MAX;
        for (int64_t t = start; t < stop; t++)
            for (int j = 0; j < 8; j++)
                lanes[j] += (hashes[t] >> j) & LANE;
        for (int j = 0; j < 8; j++)
            for (int b = 0; b < 8; b++)
                ones[8 * b + j] += (lanes[j] >> (8 * b)) & 0xFF;
    }
    uint64_t fp = 0;
    for (int i = 0; i < 64; i++)
        if (2 * ones[i] > hi - lo)
            fp |= 1ULL << i;
    return fp;
}

/* Shingle s of a document's word hashes (sketch.shingles_of_units): three words mixed
 * (past the end: 0), then fmix64. */
static inline uint64_t shingle(const uint64_t *hashes, int64_t m, int64_t s) {
    uint64_t b = s + 1 < m ? hashes[s + 1] : 0, c = s + 2 < m ? hashes[s + 2] : 0;
    uint64_t h = hashes[s] * MIX0 + b * MIX1 + c;
    h ^= h >> 33;
    h *= FMIX0;
    h ^= h >> 33;
    h *= FMIX1;
    h ^= h >> 33;
    return h;
}

/* The exact sketch of a document's shingles in `out` (width bytes), if it has at most
 * `exact` distinct top 32 bits (`exact` <= EXACT_MOST): 1, else 0 and `out` untouched. */
static int exact_sketch(const uint64_t *hashes, int64_t m, int64_t shingles, int exact, uint8_t *out,
                        int64_t width) {
    uint32_t held[EXACT_MOST];
    int n = 0;
    for (int64_t s = 0; s < shingles; s++) {
        uint32_t v = (uint32_t)(shingle(hashes, m, s) >> 32);
        int lo = 0, hi = n; /* the first held value >= v */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (held[mid] < v)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < n && held[lo] == v)
            continue;
        if (n == exact)
            return 0;
        memmove(held + lo + 1, held + lo, sizeof(uint32_t) * (size_t)(n - lo));
        held[lo] = v;
        n++;
    }
    uint64_t mark = EXACT_MARK;
    uint32_t count = (uint32_t)n;
    memset(out, 0, (size_t)width);
    memcpy(out, &mark, 8);
    memcpy(out + 8, &count, 4);
    memcpy(out + 12, held, sizeof(uint32_t) * (size_t)n);
    return 1;
}

/* The one-permutation sketch of a document's word 3-shingles (a text of one or two words is
 * one shingle, padded with 0): 2 ** log2_bins bins, each bin's least 16-bit value coded in
 * `bits` bits by multiply-shift (0 where a bin is empty), packed into `out`. A document of
 * 1 to `exact` distinct shingles (their top 32 bits) gets an exact sketch instead
 * (sketch.OnePermutation._hold_exactly): EXACT_MARK, the count, the values ascending.
 * `minima` (2 ** log2_bins) is all EMPTY before and after; `touched` has one place more: each
 * shingle's bin is written at touched[occupied] before it is known to be a new one.
 * Only the bins a shingle falls in are visited: a document fills ~100 of 1,024. */
static void sketch(const uint64_t *hashes, int64_t m, int log2_bins, int bits, int exact, uint16_t *minima,
                   uint32_t *touched, uint8_t *out, int64_t width) {
    int64_t occupied = 0;
    int64_t shingles = m > 2 ? m - 2 : (m > 0 ? 1 : 0);
    for (int64_t s = 0; s < shingles; s++) {
        uint64_t h = shingle(hashes, m, s);
        uint32_t slot = log2_bins ? (uint32_t)(h >> (64 - log2_bins)) : 0;
        uint16_t value = (uint16_t)((h >> (48 - log2_bins)) & 0xFFFF);
        if (value > EMPTY - 1)
            value = EMPTY - 1;
        touched[occupied] = slot;
        occupied += minima[slot] == EMPTY;
        if (value < minima[slot])
            minima[slot] = value;
    }
    if (!(occupied > 0 && occupied <= exact && exact_sketch(hashes, m, shingles, exact, out, width))) {
        int per_byte = 8 / bits, codes = (1 << bits) - 1;
        memset(out, 0, (size_t)width);
        for (int64_t i = 0; i < occupied; i++) {
            uint32_t slot = touched[i];
            unsigned code = ((minima[slot] & 0xFF) * codes >> 8) + 1;
            out[slot / per_byte] |= (uint8_t)(code << (bits * (slot % per_byte)));
        }
    }
    for (int64_t i = 0; i < occupied; i++)
        minima[touched[i]] = EMPTY;
}

typedef struct {
    const uint8_t *raw;
    int64_t n_bytes, n_docs, width;
    const int64_t *starts, *ends;
    int heads, log2_bins, bits, exact;
    uint64_t *fps, *head_fps;
    uint8_t *found, *has_head, *sketches, *done;
} Batch;

/* The documents of a batch, without the GIL; 0, or -1 where memory ran out. */
static int documents(const Batch *b) {
    int64_t longest = 0;
    for (int64_t d = 0; d < b->n_docs; d++)
        if (b->ends[d] - b->starts[d] > longest)
            longest = b->ends[d] - b->starts[d];
    uint8_t *low = malloc(b->n_bytes + 1);
    uint64_t *word_bits = malloc(sizeof(uint64_t) * ((b->n_bytes + 63) / 64 + 1));
    int64_t *edges = malloc(sizeof(int64_t) * (longest + 2));
    uint64_t *hashes = malloc(sizeof(uint64_t) * (longest / 2 + 1));
    uint16_t *minima = malloc(sizeof(uint16_t) << b->log2_bins);
    uint32_t *touched = malloc(sizeof(uint32_t) * (((size_t)1 << b->log2_bins) + 1)); /* sketch writes one past */
    int status = -1;
    if (!low || !word_bits || !edges || !hashes || !minima || !touched)
        goto out;
    for (int64_t i = 0; i < (int64_t)1 << b->log2_bins; i++)
        minima[i] = EMPTY;
    fold(b->raw, b->n_bytes, low, word_bits);
    for (int64_t d = 0; d < b->n_docs; d++) {
        int64_t m = word_edges(word_bits, b->starts[d], b->ends[d], edges) / 2; /* words */
        b->done[d] = 1;
        for (int64_t w = 0; w < m; w++) {
            int64_t p = edges[2 * w], q = edges[2 * w + 1];
            if (q - p > VECTORIZED_MAX) {
                b->done[d] = 0;
                break;
            }
            hashes[w] = xxh3(low + p, q - p);
        }
        if (!b->done[d])
            continue;
        b->found[d] = m > 0;
        b->has_head[d] = 0;
        if (m > 0)
            b->fps[d] = fingerprint(hashes, 0, m);
        if (b->heads && m > HEAD_TOKENS) {
            int64_t best = 0; /* the first of the smallest hashes that HEAD_TOKENS - 1 words follow */
            for (int64_t s = 1; s < m - HEAD_TOKENS + 1; s++)
                if (hashes[s] < hashes[best])
                    best = s;
            b->head_fps[d] = fingerprint(hashes, best, best + HEAD_TOKENS);
            b->has_head[d] = 1;
        }
        if (b->width)
            sketch(hashes, m, b->log2_bins, b->bits, b->exact, minima, touched, b->sketches + d * b->width, b->width);
    }
    status = 0;
out:
    free(low);
    free(word_bits);
    free(edges);
    free(hashes);
    free(minima);
    free(touched);
    return status;
}

static int writable_size(Py_buffer *view, Py_ssize_t items, Py_ssize_t itemsize, const char *name) {
    if (view->len != items * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, not %zd", name, view->len, items * itemsize);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(text_documents_doc,
    "text_documents(raw, starts, ends, heads, log2_bins, bits, exact, fps, found, head_fps, has_head,\n"
    "               sketches, done)\n"
    "\n"
    "For each document d, raw[starts[d]:ends[d]] (ASCII, or UTF-8 in which every character past\n"
    "ASCII is a word character; int64 bounds): its fingerprint\n"
    "(fps[d], uint64; found[d]: it has a word), with `heads` its head fingerprint (head_fps[d];\n"
    "has_head[d]: it has more than HEAD_TOKENS words), and where `sketches` is not empty, its\n"
    "one-permutation sketch of 2 ** log2_bins bins of `bits` bits in row d of sketches (uint8),\n"
    "or where it has 1 to `exact` distinct shingles, its exact sketch (sketch.OnePermutation).\n"
    "done[d] is False for a document with a word longer than 128 bytes, which the numpy path\n"
    "hashes instead (its other outputs are not written). found, has_head, done: bool arrays.");

static PyObject *text_documents(PyObject *self, PyObject *args) {
    Py_buffer raw, starts, ends, fps, found, head_fps, has_head, sketches, done;
    int heads, log2_bins, bits, exact;
    if (!PyArg_ParseTuple(args, "y*y*y*piii" "w*w*w*w*w*w*", &raw, &starts, &ends, &heads, &log2_bins, &bits,
                          &exact, &fps, &found, &head_fps, &has_head, &sketches, &done))
        return NULL;
    Py_buffer *views[] = {&raw, &starts, &ends, &fps, &found, &head_fps, &has_head, &sketches, &done};
    PyObject *result = NULL;
    Py_ssize_t n = starts.len / 8;
    Batch b = {
        .raw = raw.buf, .n_bytes = raw.len, .n_docs = n, .starts = starts.buf, .ends = ends.buf,
        .heads = heads, .log2_bins = log2_bins, .bits = bits, .exact = exact, .fps = fps.buf, .head_fps = head_fps.buf,
        .found = found.buf, .has_head = has_head.buf, .sketches = sketches.buf, .done = done.buf,
    };
    if (writable_size(&ends, n, 8, "ends") || writable_size(&fps, n, 8, "fps") ||
        writable_size(&head_fps, n, 8, "head_fps") || writable_size(&found, n, 1, "found") ||
        writable_size(&has_head, n, 1, "has_head") || writable_size(&done, n, 1, "done"))
        goto out;
    if (log2_bins < 0 || log2_bins > 16 || (bits != 2 && bits != 4 && bits != 8)) {
        PyErr_SetString(PyExc_ValueError, "log2_bins: 0 to 16; bits: 2, 4 or 8");
        goto out;
    }
    b.width = sketches.len ? ((Py_ssize_t)1 << log2_bins) * bits / 8 : 0;
    if (b.width && writable_size(&sketches, n, b.width, "sketches"))
        goto out;
    if (exact < 0 || exact > EXACT_MOST || (exact && 12 + 4 * (Py_ssize_t)exact > b.width)) {
        PyErr_Format(PyExc_ValueError, "exact: 0 to %d shingles, as many as a sketch holds", EXACT_MOST);
        goto out;
    }
    for (Py_ssize_t d = 0; d < n; d++)
        if (b.starts[d] < 0 || b.starts[d] > b.ends[d] || b.ends[d] > raw.len) {
            PyErr_Format(PyExc_ValueError, "document %zd: bounds %lld to %lld outside %zd bytes", d,
                         (long long)b.starts[d], (long long)b.ends[d], raw.len);
            goto out;
        }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = documents(&b);
    Py_END_ALLOW_THREADS
    if (status)
        PyErr_NoMemory();
    else
        result = Py_NewRef(Py_None);
out:
    for (size_t i = 0; i < sizeof(views) / sizeof(*views); i++)
        PyBuffer_Release(views[i]);
    return result;
}

/* A line's decimal number, written at `out`; its length. */
static Py_ssize_t decimal(uint64_t n, char *out) {
    char digits[20];
    Py_ssize_t len = 0;
    do {
        digits[len++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    for (Py_ssize_t i = 0; i < len; i++)
        out[i] = digits[len - 1 - i];
    return len;
}

/* A 64-bit fingerprint as 16 lowercase hex digits at `out`. */
static void hex16(uint64_t fp, char *out) {
    static const char HEX[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--, fp >>= 4)
        out[i] = HEX[fp & 15];
}

PyDoc_STRVAR(numbered_lines_doc,
    "numbered_lines(prefix, first, fps, found, jsonl) -> bytes\n"
    "\n"
    "`fingerprint`'s output lines for the ids prefix + str(first + i) (prefix: UTF-8 bytes,\n"
    "escaped for the format already): FINGERPRINT<TAB>ID, or with `jsonl` the record\n"
    "{\"id\": \"ID\", \"fingerprint\": \"FINGERPRINT\"}; \"-\" and null where found[i] is False.\n"
    "fps: uint64, found: bool, one each a line.");

static PyObject *numbered_lines(PyObject *self, PyObject *args) {
    Py_buffer prefix, fps_view, found_view;
    unsigned long long first;
    int jsonl;
    if (!PyArg_ParseTuple(args, "y*Ky*y*p", &prefix, &first, &fps_view, &found_view, &jsonl))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = fps_view.len / 8;
    if (found_view.len != n) {
        PyErr_SetString(PyExc_ValueError, "found: one a fingerprint");
        goto out;
    }
    static const char ID[] = "{\"id\": \"", FP[] = "\", \"fingerprint\": ", END[] = "}\n";
    Py_ssize_t longest = prefix.len + 20 + (jsonl ? sizeof(ID) + sizeof(FP) + sizeof(END) + 18 : 19);
    result = PyBytes_FromStringAndSize(NULL, n * longest);
    if (!result)
        goto out;
    char *at = PyBytes_AS_STRING(result);
    const uint64_t *fps = fps_view.buf;
    const uint8_t *found = found_view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        if (jsonl) {
            memcpy(at, ID, sizeof(ID) - 1), at += sizeof(ID) - 1;
            memcpy(at, prefix.buf, prefix.len), at += prefix.len;
            at += decimal(first + i, at);
            memcpy(at, FP, sizeof(FP) - 1), at += sizeof(FP) - 1;
            if (found[i]) {
                *at++ = '"';
                hex16(fps[i], at), at += 16;
                *at++ = '"';
            } else {
                memcpy(at, "null", 4), at += 4;
            }
            memcpy(at, END, sizeof(END) - 1), at += sizeof(END) - 1;
        } else {
            if (found[i])
                hex16(fps[i], at), at += 16;
            else
                *at++ = '-';
            *at++ = '\t';
            memcpy(at, prefix.buf, prefix.len), at += prefix.len;
            at += decimal(first + i, at);
            *at++ = '\n';
        }
    }
    Py_END_ALLOW_THREADS
    _PyBytes_Resize(&result, at - PyBytes_AS_STRING(result));
out:
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&fps_view);
    PyBuffer_Release(&found_view);
    return result;
}

PyDoc_STRVAR(line_ends_doc,
    "line_ends(data) -> bytearray\n"
    "\n"
    "Where each newline of `data` is, as int64 offsets, in order: memchr from one to the\n"
    "next. numpy's flatnonzero(data == 10) took 0.17 s of a 1.3 s `fingerprint -j1` of\n"
    "1M lines, two passes and a bool a byte.");

static PyObject *line_ends(PyObject *self, PyObject *args) {
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data))
        return NULL;
    const char *start = data.buf, *stop = start + data.len;
    Py_ssize_t room = 1024, n = 0;
    int64_t *ends = PyMem_RawMalloc(sizeof(int64_t) * room);
    int failed = ends == NULL;
    Py_BEGIN_ALLOW_THREADS
    for (const char *at = start; !failed && at < stop;) {
        const char *nl = memchr(at, '\n', (size_t)(stop - at));
        if (!nl)
            break;
        if (n == room) {
            int64_t *more = PyMem_RawRealloc(ends, sizeof(int64_t) * room * 2);
            if (!more) {
                failed = 1;
                break;
            }
            ends = more, room *= 2;
        }
        ends[n++] = nl - start;
        at = nl + 1;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    PyObject *result = failed ? PyErr_NoMemory() : PyByteArray_FromStringAndSize((const char *)ends, sizeof(int64_t) * n);
    PyMem_RawFree(ends);
    return result;
}

/* How utf8_forms reads a code point past ASCII (compiled_text._READS, the table it is given). */
enum { WORD_BYTES = 1, SEPARATOR = 2, TO_FOLD = 3, NOT_READ = 4, UNSEEN = 255 };
/* What utf8_forms says of a text (its flags). */
enum { HAS_NOT_READ = 1, FOLDS_INTO_SEVERAL = 2, HAS_UNSEEN = 4 };
/* A fold into several code points: the rest of folds[c] is a row of `several`. */
#define SEVERAL_MARK 0x80000000u
#define SEVERAL_MOST 3 /* the most code points a case fold is (Unicode 15) */

static inline int64_t put_utf8(uint8_t *out, uint32_t c) {
    if (c < 0x800) {
        out[0] = 0xC0 | (c >> 6), out[1] = 0x80 | (c & 0x3F);
        return 2;
    }
    if (c < 0x10000) {
        out[0] = 0xE0 | (c >> 12), out[1] = 0x80 | ((c >> 6) & 0x3F), out[2] = 0x80 | (c & 0x3F);
        return 3;
    }
    out[0] = 0xF0 | (c >> 18), out[1] = 0x80 | ((c >> 12) & 0x3F), out[2] = 0x80 | ((c >> 6) & 0x3F);
    out[3] = 0x80 | (c & 0x3F);
    return 4;
}

static inline uint8_t kind_of(const uint8_t *read, uint32_t x) { return x < 0x110000 ? read[x] : NOT_READ; }

/* x as the core reads it, into out: ASCII as it is, a word character in UTF-8, a separator
 * as a space; anything else (a fold of a fold, Han, a surrogate, not yet known) is said. */
static inline int64_t put_read(uint8_t *out, uint32_t x, uint8_t kind, uint8_t *said) {
    if (x < 0x80) {
        *out = (uint8_t)x;
        return 1;
    }
    if (kind == WORD_BYTES)
        return put_utf8(out, x);
    if (kind == SEPARATOR) {
        *out = ' ';
        return 1;
    }
    *said |= kind == UNSEEN ? HAS_UNSEEN : HAS_NOT_READ;
    return 0;
}

PyDoc_STRVAR(utf8_forms_doc,
    "utf8_forms(codes, ends, reads, folds, several, out, out_ends, flags)\n"
    "\n"
    "Texts given as code points (codes: uint32, text t ending at ends[t], int64) in UTF-8 as the\n"
    "compiled core reads them, into out (uint8, 12 bytes a code point; text t ending at\n"
    "out_ends[t]): ASCII as it is; past ASCII, by reads[c] (uint8, one a code point): a word\n"
    "character in UTF-8, a separator as a space, a character to fold as folds[c] (uint32), or\n"
    "where that has its top bit set, as the code points of row folds[c] & 0x7FFFFFFF of\n"
    "several (uint32, 3 a row, 0 after the last), each read the same way. flags[t] (uint8): 1\n"
    "where text t holds a character not read (Han, a surrogate, a fold to fold again), 2 one\n"
    "whose folds[c] is 0, 4 one whose reads[c] is 255 (not yet known); such a text's bytes are\n"
    "meaningless.");

static PyObject *utf8_forms(PyObject *self, PyObject *args) {
    Py_buffer codes, ends, reads, folds, several, out, out_ends, flags;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*w*w*", &codes, &ends, &reads, &folds, &several, &out, &out_ends,
                          &flags))
        return NULL;
    Py_buffer *views[] = {&codes, &ends, &reads, &folds, &several, &out, &out_ends, &flags};
    PyObject *result = NULL;
    int64_t n_codes = codes.len / 4, n_texts = ends.len / 8, rows = several.len / (4 * SEVERAL_MOST);
    const int64_t *end = ends.buf;
    int ok = codes.len % 4 == 0 && ends.len % 8 == 0 && reads.len == 0x110000 && folds.len == 4 * 0x110000 &&
             several.len % (4 * SEVERAL_MOST) == 0 && out.len >= 4 * SEVERAL_MOST * n_codes &&
             out_ends.len == ends.len && flags.len == n_texts;
    for (int64_t t = 0; ok && t < n_texts; t++)
        ok = end[t] >= (t ? end[t - 1] : 0) && end[t] <= n_codes;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "utf8_forms: buffers of other sizes, or ends out of order or bounds");
        goto done;
    }
    /* The ends, checked, in memory of its own: `out` over `ends`, or another thread's
     * writes while the GIL is released, would move them (a review: a crash). */
    int64_t *end_at = PyMem_RawMalloc(n_texts ? 8 * n_texts : 1);
    if (!end_at) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(end_at, end, 8 * n_texts);
    const uint32_t *c = codes.buf, *fold = folds.buf, *row = several.buf;
    const uint8_t *read = reads.buf;
    uint8_t *o = out.buf, *flag = flags.buf;
    int64_t *o_end = out_ends.buf;
    Py_BEGIN_ALLOW_THREADS
    int64_t at = 0, i = 0;
    for (int64_t t = 0; t < n_texts; t++) {
        uint8_t said = 0;
        for (; i < end_at[t]; i++) {
            uint32_t x = c[i];
            if (x < 0x80) {
                o[at++] = (uint8_t)x;
                continue;
            }
            uint8_t kind = kind_of(read, x);
            if (kind != TO_FOLD) {
                at += put_read(o + at, x, kind, &said);
                continue;
            }
            uint32_t into = fold[x];
            if (!into) {
                said |= FOLDS_INTO_SEVERAL;
            } else if (into & SEVERAL_MARK) {
                int64_t r = into & ~SEVERAL_MARK;
                if (r >= rows || !row[SEVERAL_MOST * r]) { /* no such row, or one not written */
                    said |= HAS_NOT_READ;
                    continue;
                }
                for (int p = 0; p < SEVERAL_MOST && row[SEVERAL_MOST * r + p]; p++) {
                    uint32_t y = row[SEVERAL_MOST * r + p];
                    uint8_t its = kind_of(read, y);
                    at += put_read(o + at, y, its == TO_FOLD ? NOT_READ : its, &said);
                }
            } else {
                uint8_t its = kind_of(read, into);
                at += put_read(o + at, into, its == TO_FOLD ? NOT_READ : its, &said);
            }
        }
        o_end[t] = at;
        flag[t] = said;
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(end_at);
    result = Py_None;
    Py_INCREF(result);
done:
    for (size_t v = 0; v < sizeof(views) / sizeof(views[0]); v++)
        PyBuffer_Release(views[v]);
    return result;
}

static PyMethodDef methods[] = {
    {"text_documents", text_documents, METH_VARARGS, text_documents_doc},
    {"numbered_lines", numbered_lines, METH_VARARGS, numbered_lines_doc},
    {"line_ends", line_ends, METH_VARARGS, line_ends_doc},
    {"utf8_forms", utf8_forms, METH_VARARGS, utf8_forms_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "simdedup._textcore",
    "The compiled core for text without Han characters: see simdedup/compiled_text.py.", -1, methods,
};

static int add_mark(PyObject *m) {
    PyObject *mark = PyLong_FromUnsignedLongLong(EXACT_MARK);
    int status = mark ? PyModule_AddObjectRef(m, "EXACT_MARK", mark) : -1;
    Py_XDECREF(mark);
    return status;
}

PyMODINIT_FUNC PyInit__textcore(void) {
    PyObject *m = PyModule_Create(&module);
    /* The constants it shares with the Python modules, for the tests to compare. */
    if (m && (PyModule_AddIntConstant(m, "HEAD_TOKENS", HEAD_TOKENS) || PyModule_AddIntConstant(m, "VECTORIZED_MAX", VECTORIZED_MAX) ||
              PyModule_AddIntConstant(m, "LANE_MAX", LANE_MAX) || PyModule_AddIntConstant(m, "EMPTY", EMPTY) ||
              PyModule_AddIntConstant(m, "EXACT_MOST", EXACT_MOST) || add_mark(m) ||
              PyModule_AddIntConstant(m, "WORD_BYTES", WORD_BYTES) || PyModule_AddIntConstant(m, "SEPARATOR", SEPARATOR) ||
              PyModule_AddIntConstant(m, "TO_FOLD", TO_FOLD) || PyModule_AddIntConstant(m, "NOT_READ", NOT_READ) ||
              PyModule_AddIntConstant(m, "UNSEEN", UNSEEN) || PyModule_AddIntConstant(m, "SEVERAL_MOST", SEVERAL_MOST))) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
