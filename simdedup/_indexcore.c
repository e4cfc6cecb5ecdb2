/* Compiled loops for the index and verification, in C: see simdedup/compiled.py, which wraps them.
 *
 * Each function does in one loop what index.py or sketch.py does in several numpy passes,
 * with the same results. They read and write only the buffers they are given (C-contiguous,
 * of the types compiled.py gives them), keep no state between calls, never print, and
 * release the GIL while they work, taking it back only to grow an output.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

/* The loops that compare fingerprints and sketches are built three times, and the module
 * picks the fastest that the CPU runs when it loads (`loops`; use() picks another, for the
 * tests): "avx512", eight candidates a step (AVX-512 with its popcount, VPOPCNTDQ);
 * "popcnt", a candidate a step with the popcnt instruction; "generic", any CPU. Each is
 * one body (a *_body function, always inlined) compiled for that CPU. */
#define HOT static inline __attribute__((always_inline))
#if defined(__x86_64__) && defined(__GNUC__)
#define X86 1
#include <immintrin.h>
#define POPCNT __attribute__((target("popcnt")))
#define WIDE __attribute__((target("avx512f,avx512vpopcntdq,popcnt")))
#else
#define X86 0
#define POPCNT
#define WIDE
#endif

HOT int64_t popcount(uint64_t x) { return __builtin_popcountll(x); }

/* ---------------------------------------------------------------- outputs that grow */

/* Three int64 columns in bytearrays (or one: a pair packed, append_pair), for compiled.py
 * to view with numpy; grown, GIL taken back for it, when full. */
typedef struct {
    PyObject *col[3];
    int64_t *at[3];
    int cols;
    Py_ssize_t n, cap;
    PyThreadState *released; /* the thread state while the GIL is released, else NULL */
} Triples;

static void triples_drop(Triples *t);

static int columns_new(Triples *t, Py_ssize_t cap, int cols) {
    memset(t, 0, sizeof(*t));
    t->cap = cap < 64 ? 64 : cap;
    t->cols = cols;
    for (int c = 0; c < cols; c++) {
        t->col[c] = PyByteArray_FromStringAndSize(NULL, t->cap * 8);
        if (!t->col[c]) {
            triples_drop(t); /* the columns made before it (they leaked: a review) */
            return -1;
        }
        t->at[c] = (int64_t *)PyByteArray_AS_STRING(t->col[c]);
    }
    return 0;
}

static int triples_new(Triples *t, Py_ssize_t cap) { return columns_new(t, cap, 3); }

static void triples_drop(Triples *t) {
    for (int c = 0; c < 3; c++)
        Py_CLEAR(t->col[c]);
}

static void release(Triples *t) { t->released = PyEval_SaveThread(); }

static void take_back(Triples *t) {
    PyEval_RestoreThread(t->released);
    t->released = NULL;
}

static int triples_grow(Triples *t) {
    int status = 0;
    take_back(t);
    for (int c = 0; c < t->cols && !status; c++) {
        if (PyByteArray_Resize(t->col[c], 2 * t->cap * 8) < 0)
            status = -1;
        else
            t->at[c] = (int64_t *)PyByteArray_AS_STRING(t->col[c]);
    }
    release(t);
    if (!status)
        t->cap *= 2;
    return status;
}

static inline int append(Triples *t, int64_t a, int64_t b, int64_t c) {
    if (t->n == t->cap && triples_grow(t))
        return -1;
    t->at[0][t->n] = a;
    t->at[1][t->n] = b;
    t->at[2][t->n] = c;
    t->n++;
    return 0;
}

/* A pair of rows below 2 ** PAIR_ROW_BITS and their distance d (< 256) as one 64-bit value,
 * a << PAIR_I_SHIFT | b << 8 | d, in a one-column Triples: a third of the bytes that 4.6M
 * pairs of 1M real fingerprints at k = 4 wrote, read and placed as three int64s, and d
 * counted where both fingerprints are at hand (sorted_runs counted it from the words, a
 * read from memory a pair). Read back as uint64: from i = 2 ** 27 the int64 is negative. */
#define PAIR_ROW_BITS 28
#define PAIR_I_SHIFT (PAIR_ROW_BITS + 8)
static inline int append_pair(Triples *t, int64_t a, int64_t b, int64_t d) {
    if (t->n == t->cap && triples_grow(t))
        return -1;
    t->at[0][t->n++] = (int64_t)((uint64_t)a << PAIR_I_SHIFT | (uint64_t)b << 8 | (uint64_t)d);
    return 0;
}

/* The three columns cut to their length, as a tuple; NULL with an exception (the GIL held). */
static PyObject *triples_done(Triples *t, int status) {
    PyObject *out = NULL;
    if (!status && !PyErr_Occurred()) {
        int ok = 1;
        for (int c = 0; c < t->cols; c++)
            ok = ok && PyByteArray_Resize(t->col[c], t->n * 8) == 0;
        if (ok)
            out = t->cols == 1 ? PyTuple_Pack(1, t->col[0]) : PyTuple_Pack(3, t->col[0], t->col[1], t->col[2]);
    } else if (!PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    triples_drop(t);
    return out;
}

typedef struct Search Search;
typedef struct Similarity Similarity;

/* The loops of one kind of CPU (see HOT above). */
typedef struct {
    const char *name;
    int (*search)(const Search *, Triples *);
    int (*bucket_pairs)(const uint32_t *, const uint32_t *, Py_ssize_t, int64_t, const uint64_t *, int64_t,
                        const uint64_t *, Triples *);
    int (*every_pair)(const uint64_t *, Py_ssize_t, const uint64_t *, Py_ssize_t, int64_t, int, Triples *);
    int (*similarities)(const Similarity *);
} Loops;

static const Loops *loops;

/* ---------------------------------------------------------------- buffers given */

typedef struct {
    Py_buffer view[24];
    int n;
} Views;

static void views_release(Views *v) {
    for (int i = 0; i < v->n; i++)
        PyBuffer_Release(&v->view[i]);
    v->n = 0;
}

/* A buffer's memory, with at least `items` items of `size` bytes; NULL with ValueError. */
static void *buffer_of(Views *v, PyObject *obj, Py_ssize_t items, Py_ssize_t size, int writable, const char *name) {
    Py_buffer *view = &v->view[v->n];
    if (PyObject_GetBuffer(obj, view, (writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    v->n++;
    if (view->len < items * size) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, not %zd or more", name, view->len, items * size);
        return NULL;
    }
    return view->buf;
}

/* How many items of `size` bytes a buffer holds (-1 with an exception where it is none). */
static Py_ssize_t items_of(PyObject *obj, Py_ssize_t size) {
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return -1;
    Py_ssize_t n = view.len / size;
    PyBuffer_Release(&view);
    return n;
}

/* The end of a call that fills buffers it was given: its views released, then None, or
 * NULL with the exception already set (`given` NULL) or a ValueError saying `bad`. */
static PyObject *filled(Views *v, const void *given, const char *bad) {
    views_release(v);
    if (given && bad)
        PyErr_SetString(PyExc_ValueError, bad);
    if (!given || bad)
        return NULL;
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------- keys and tables */

/* index.Layout.key_hash of one 64-bit fingerprint: its key blocks mixed. */
static inline uint64_t key_hash(uint64_t x, const uint64_t *starts, const uint64_t *masks, Py_ssize_t blocks,
                                const uint64_t *mix) {
    uint64_t h = ((x >> starts[0]) & masks[0]) * mix[0];
    for (Py_ssize_t b = 1; b < blocks; b++) {
        h ^= h >> 29;
        h = (h ^ ((x >> starts[b]) & masks[b])) * mix[1];
    }
    h ^= h >> 32;
    return h * mix[2];
}

static PyObject *key_hashes(PyObject *self, PyObject *args) {
    PyObject *w, *s, *m, *x, *o;
    int p; /* < 0: the hashes themselves (uint64), else their top p bits as buckets (int64) */
    if (!PyArg_ParseTuple(args, "OOOOiO", &w, &s, &m, &x, &p, &o))
        return NULL;
    Views v = {.n = 0};
    Py_ssize_t n = items_of(w, 8), blocks = items_of(s, 8);
    const uint64_t *words = buffer_of(&v, w, n, 8, 0, "words");
    const uint64_t *starts = words ? buffer_of(&v, s, blocks, 8, 0, "starts") : NULL;
    const uint64_t *masks = starts ? buffer_of(&v, m, blocks, 8, 0, "masks") : NULL;
    const uint64_t *mix = masks ? buffer_of(&v, x, 3, 8, 0, "mix") : NULL;
    uint64_t *out = mix ? buffer_of(&v, o, n, 8, 1, "out") : NULL;
    if (!out || blocks < 1 || p > 64) {
        if (out)
            PyErr_SetString(PyExc_ValueError, "a key of one block or more, p <= 64");
        views_release(&v);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t h = key_hash(words[i], starts, masks, blocks, mix);
        out[i] = p < 0 ? h : p == 0 ? 0 : h >> (64 - p);
    }
    Py_END_ALLOW_THREADS
    views_release(&v);
    Py_RETURN_NONE;
}

static void radix_sort(int64_t *a, int64_t n, int64_t *scratch, int low);

/* top_order(hashes, top, order): the places 0 .. n - 1 of uint64 hashes ordered by their
 * top `top` (< 32) bits, equal tops in place order: radix_sort of (top bits << 32 | place)
 * by its top half.
 * A run of 2 ** p buckets, p <= top, then finds its queries grouped by bucket, which is
 * all that search_run asks of them. numpy's stable argsort of the whole hashes (a timsort)
 * was an eighth of deciding a batch of 4,096. */
static PyObject *top_order(PyObject *self, PyObject *args) {
    PyObject *h, *o;
    int top;
    if (!PyArg_ParseTuple(args, "OiO", &h, &top, &o))
        return NULL;
    Views v = {.n = 0};
    Py_ssize_t n = items_of(h, 8);
    const uint64_t *hashes = buffer_of(&v, h, n, 8, 0, "hashes");
    int64_t *order = hashes ? buffer_of(&v, o, n, 8, 1, "order") : NULL;
    if (order && (top < 0 || top > 31 || n >= (1LL << 32))) {
        PyErr_SetString(PyExc_ValueError, "0 <= top < 32, under 2 ** 32 places");
        order = NULL;
    }
    int64_t *scratch = order ? malloc(sizeof(int64_t) * (n ? n : 1)) : NULL;
    if (!scratch) {
        if (order)
            PyErr_NoMemory();
        views_release(&v);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        order[i] = (top ? (int64_t)(hashes[i] >> (64 - top)) << 32 : 0) | i;
    radix_sort(order, n, scratch, 4); /* by the top bits: the places are in order already */
    for (Py_ssize_t i = 0; i < n; i++)
        order[i] &= 0xFFFFFFFF;
    Py_END_ALLOW_THREADS
    free(scratch);
    views_release(&v);
    Py_RETURN_NONE;
}

static PyObject *build_table(PyObject *self, PyObject *args) {
    PyObject *b, *o, *f;
    if (!PyArg_ParseTuple(args, "OOO", &b, &o, &f))
        return NULL;
    Views v = {.n = 0};
    Py_ssize_t n = items_of(b, 8), nb = items_of(f, 4) - 1;
    const int64_t *buckets = buffer_of(&v, b, n, 8, 0, "buckets");
    uint32_t *order = buckets ? buffer_of(&v, o, n, 4, 1, "order") : NULL;
    uint32_t *offsets = order ? buffer_of(&v, f, nb + 1, 4, 1, "offsets") : NULL;
    int64_t *fill = offsets ? malloc(sizeof(int64_t) * (nb + 1)) : NULL;
    if (!fill) {
        if (offsets)
            PyErr_NoMemory();
        views_release(&v);
        return NULL;
    }
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        if (buckets[i] < 0 || buckets[i] >= nb) {
            bad = 1;
            break;
        }
        offsets[buckets[i] + 1]++;
    }
    if (!bad) {
        for (Py_ssize_t c = 0; c < nb; c++)
            offsets[c + 1] += offsets[c];
        for (Py_ssize_t c = 0; c <= nb; c++)
            fill[c] = offsets[c];
        for (Py_ssize_t i = 0; i < n; i++)
            order[fill[buckets[i]]++] = (uint32_t)i;
    }
    Py_END_ALLOW_THREADS
    free(fill);
    return filled(&v, offsets, bad ? "a bucket outside the offsets" : NULL);
}

/* ---------------------------------------------------------------- comparisons */

/* The words of a table's rule (index.Layout.first_table_rules). */
#define RULE_WORDS 6

/* Whether two fingerprints whose XOR is x are within k and a table whose rule
 * (index.Layout.first_table_rules) is `rule` is the first keyed on blocks they agree on: x
 * is zero on the table's key (rule[0]), on none of the blocks of `earlier` (rule[1], their
 * lowest bits rule[2], their highest rule[3]), and on at most one of the blocks of an
 * earlier group of tables (their bits but the highest rule[4], their highest rule[5]). For
 * `earlier`, y is x with every other bit set, and (y - low) & ~y & high, the classic test
 * for a zero byte made for these blocks, is non-zero exactly when one is zero. For the
 * group, (x & lower) + lower carries into a block's highest bit exactly when x has a bit
 * below it there, and never beyond, so z holds the highest bit of each block where x is
 * zero, exactly; z & (z - 1) is zero when it holds one at most. */
HOT uint64_t near_here(uint64_t x, int64_t k, const uint64_t *rule) {
    uint64_t y = x | ~rule[1];
    uint64_t z = ~(((x & rule[4]) + rule[4]) | x) & rule[5];
    return (popcount(x) <= k) & ((x & rule[0]) == 0) & (((y - rule[2]) & ~y & rule[3]) == 0) &
           ((z & (z - 1)) == 0);
}

/* Bit e set where words[e] ^ value passes near_here, for e < 64. */
HOT uint64_t hits64(const uint64_t *words, uint64_t value, int64_t k, const uint64_t *rule) {
    uint64_t hits = 0;
    for (int e = 0; e < 64; e++)
        hits |= near_here(words[e] ^ value, k, rule) << e;
    return hits;
}

#if X86
/* hits64 of words[:n], n <= 64, eight candidates a step in AVX-512: the lanes past n are
 * masked off, neither read nor hits, so a bucket's last places (all of a small one's, which
 * most are) take a step per eight too. One at a time, with a branch each that went either
 * way, they were half of a search's time. */
WIDE static inline uint64_t hits_wide(const uint64_t *words, Py_ssize_t n, uint64_t value, int64_t k,
                                      const uint64_t *rule) {
    __m512i v = _mm512_set1_epi64((long long)value), most = _mm512_set1_epi64(k);
    __m512i key = _mm512_set1_epi64((long long)rule[0]), others = _mm512_set1_epi64((long long)~rule[1]);
    __m512i low = _mm512_set1_epi64((long long)rule[2]), high = _mm512_set1_epi64((long long)rule[3]);
    __m512i lower = _mm512_set1_epi64((long long)rule[4]), tops = _mm512_set1_epi64((long long)rule[5]);
    __m512i one = _mm512_set1_epi64(1);
    uint64_t hits = 0;
    for (Py_ssize_t e = 0; e < n; e += 8) {
        __mmask8 in = n - e >= 8 ? 0xFF : (__mmask8)((1u << (n - e)) - 1);
        __m512i x = _mm512_xor_si512(_mm512_maskz_loadu_epi64(in, (const void *)(words + e)), v);
        __mmask8 m = _mm512_mask_cmple_epi64_mask(in, _mm512_popcnt_epi64(x), most);
        m &= _mm512_testn_epi64_mask(x, key);
        __m512i y = _mm512_or_si512(x, others);
        m &= _mm512_testn_epi64_mask(_mm512_andnot_si512(y, _mm512_sub_epi64(y, low)), high);
        __m512i carried = _mm512_or_si512(_mm512_add_epi64(_mm512_and_si512(x, lower), lower), x);
        __m512i z = _mm512_andnot_si512(carried, tops);
        m &= _mm512_testn_epi64_mask(z, _mm512_sub_epi64(z, one));
        hits |= (uint64_t)m << e;
    }
    return hits;
}
#endif

/* The places j of words[:n] within k of value (and first in this table, by `rule`), in
 * order, written to at[:count] (at holds n or more); returns count. 64 places at a time: a
 * mask of their hits, then one write a hit. */
HOT Py_ssize_t within(const uint64_t *words, uint64_t value, Py_ssize_t n, int64_t k, int64_t *at,
                      const uint64_t *rule, int wide) {
    Py_ssize_t found = 0, j = 0;
    for (; j < n; j += 64) {
        if (j + 64 > n && !wide) { /* the last places (all of a small bucket's), most of them far */
            for (; j < n; j++)
                if (near_here(words[j] ^ value, k, rule))
                    at[found++] = j;
            break;
        }
#if X86
        /* 64 given as a constant for a whole block: its loop unrolled, 1.3-1.4x faster (a review) */
        uint64_t hits = !wide ? hits64(words + j, value, k, rule)
                        : n - j >= 64 ? hits_wide(words + j, 64, value, k, rule)
                                      : hits_wide(words + j, n - j, value, k, rule);
#else
        uint64_t hits = hits64(words + j, value, k, rule);
#endif
        while (hits) {
            at[found++] = j + __builtin_ctzll(hits);
            hits &= hits - 1;
        }
    }
    return found;
}

static PyObject *near_here_of(PyObject *self, PyObject *args) {
    unsigned long long x;
    long long k;
    PyObject *r;
    if (!PyArg_ParseTuple(args, "KLO", &x, &k, &r))
        return NULL;
    Views v = {.n = 0};
    const uint64_t *rule = buffer_of(&v, r, RULE_WORDS, 8, 0, "rule");
    PyObject *out = rule ? PyBool_FromLong((long)near_here(x, k, rule)) : NULL;
    views_release(&v);
    return out;
}

static int grow(void **p, Py_ssize_t *cap, Py_ssize_t need, Py_ssize_t size) {
    if (need <= *cap)
        return 0;
    void *bigger = realloc(*p, (size_t)(2 * need) * size);
    if (!bigger)
        return -1;
    *p = bigger;
    *cap = 2 * need;
    return 0;
}

/* The search of one run: see compiled.search_run. */
struct Search {
    const uint32_t *order, *offsets;
    int64_t start, least;
    int p;
    const uint64_t *hashes, *words, *queries, *rules, *hot_words;
    const int64_t *by_hash, *hot_ids, *hot_tables, *hot_at;
    Py_ssize_t tables, m, size, row; /* row: an offsets row's length */
    int64_t k;
    Py_ssize_t t_lo, t_hi;
};

HOT int search_body(const Search *s, Triples *out, int wide) {
    Py_ssize_t m = s->m, rows_cap = 8 * m + 64, near_cap = 64;
    int64_t *buckets = calloc(m + 1, 8), *ends = malloc(8 * (m + 1)), *los = malloc(8 * (m + 1));
    int64_t *his = malloc(8 * (m + 1)), *at = malloc(8 * (m + 1));
    char *copied = malloc(m + 1);
    int64_t *rows = malloc(8 * rows_cap), *near = malloc(8 * near_cap);
    uint64_t *gathered = malloc(8 * rows_cap);
    int status = -1;
    if (!buckets || !ends || !los || !his || !at || !copied || !rows || !near || !gathered)
        goto done;
    for (Py_ssize_t t = s->t_lo; t < s->t_hi; t++) {
        const int64_t *by_bucket = s->by_hash + t * m;
        const uint32_t *offsets = s->offsets + t * s->row, *order = s->order + t * s->size;
        if (s->p > 0)
            for (Py_ssize_t i = 0; i < m; i++)
                buckets[i] = (int64_t)(s->hashes[t * m + by_bucket[i]] >> (64 - s->p));
        for (Py_ssize_t i = 0, j; i < m; i = j) { /* the groups of queries in one bucket */
            for (j = i + 1; j < m && buckets[j] == buckets[i]; j++)
                ;
            ends[i] = j;
            los[i] = offsets[buckets[i]];
            his[i] = offsets[buckets[i] + 1];
        }
        Py_ssize_t total = 0;
        for (Py_ssize_t i = 0; i < m; i = ends[i]) {
            copied[i] = his[i] - los[i] >= s->least;
            if (copied[i]) { /* its place among the table's copied buckets (ascending ids) */
                const int64_t *ids = s->hot_ids + s->hot_tables[t];
                Py_ssize_t lo = 0, hi = s->hot_tables[t + 1] - s->hot_tables[t];
                while (lo < hi) {
                    Py_ssize_t mid = (lo + hi) / 2;
                    if (ids[mid] < buckets[i])
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                at[i] = s->hot_at[s->hot_tables[t] + lo];
            } else {
                at[i] = total;
                total += his[i] - los[i];
            }
        }
        if (total > rows_cap) {
            Py_ssize_t cap = rows_cap;
            if (grow((void **)&rows, &rows_cap, total, 8) || grow((void **)&gathered, &cap, total, 8))
                goto done;
        }
        for (Py_ssize_t i = 0; i < m; i = ends[i])
            if (!copied[i])
                for (int64_t r = 0; r < his[i] - los[i]; r++)
                    rows[at[i] + r] = (int64_t)order[los[i] + r] + s->start;
        for (Py_ssize_t c = 0; c < total; c++)
            gathered[c] = s->words[rows[c]];
        for (Py_ssize_t i = 0; i < m; i = ends[i]) {
            int64_t width = his[i] - los[i];
            if (grow((void **)&near, &near_cap, width, 8))
                goto done;
            const uint64_t *bucket = (copied[i] ? s->hot_words : gathered) + at[i];
            for (Py_ssize_t qi = i; qi < ends[i]; qi++) {
                int64_t q = by_bucket[qi];
                uint64_t value = s->queries[q];
                Py_ssize_t hits = within(bucket, value, width, s->k, near, s->rules + RULE_WORDS * t, wide);
                for (Py_ssize_t h = 0; h < hits; h++) {
                    int64_t r = near[h];
                    if (append(out, q, (int64_t)order[los[i] + r] + s->start, popcount(bucket[r] ^ value)))
                        goto done;
                }
            }
        }
    }
    status = 0;
done:
    free(buckets), free(ends), free(los), free(his), free(at), free(copied), free(rows), free(near), free(gathered);
    return status;
}

static PyObject *search_run(PyObject *self, PyObject *args) {
    PyObject *order, *offsets, *hashes, *by_hash, *words, *queries, *rules, *hot_ids, *hot_tables, *hot_at,
        *hot_words;
    Search s;
    if (!PyArg_ParseTuple(args, "OOLiOOOOLOnnOOOOLnn", &order, &offsets, &s.start, &s.p, &hashes, &by_hash, &words,
                          &queries, &s.k, &rules, &s.t_lo, &s.t_hi, &hot_ids, &hot_tables, &hot_at, &hot_words,
                          &s.least, &s.tables, &s.m))
        return NULL;
    Views v = {.n = 0};
    Py_ssize_t n_order = items_of(order, 4), n_offsets = items_of(offsets, 4);
    Py_ssize_t n_words = items_of(words, 8), n_hot = items_of(hot_ids, 8);
    if (s.tables < 1 || s.t_lo < 0 || s.t_hi > s.tables || s.p < 0 || s.p > 63) {
        PyErr_SetString(PyExc_ValueError, "tables out of range");
        return NULL;
    }
    s.size = n_order / s.tables;
    s.row = n_offsets / s.tables;
    s.order = buffer_of(&v, order, s.size * s.tables, 4, 0, "order");
    s.offsets = s.order ? buffer_of(&v, offsets, s.row * s.tables, 4, 0, "offsets") : NULL;
    s.hashes = s.offsets ? buffer_of(&v, hashes, s.tables * s.m, 8, 0, "hashes") : NULL;
    s.by_hash = s.hashes ? buffer_of(&v, by_hash, s.tables * s.m, 8, 0, "by_hash") : NULL;
    s.words = s.by_hash ? buffer_of(&v, words, n_words, 8, 0, "words") : NULL;
    s.queries = s.words ? buffer_of(&v, queries, s.m, 8, 0, "queries") : NULL;
    s.rules = s.queries ? buffer_of(&v, rules, RULE_WORDS * s.tables, 8, 0, "rules") : NULL;
    s.hot_ids = s.rules ? buffer_of(&v, hot_ids, n_hot, 8, 0, "hot ids") : NULL;
    s.hot_tables = s.hot_ids ? buffer_of(&v, hot_tables, 0, 8, 0, "hot tables") : NULL;
    s.hot_at = s.hot_tables ? buffer_of(&v, hot_at, n_hot, 8, 0, "hot at") : NULL;
    s.hot_words = s.hot_at ? buffer_of(&v, hot_words, 0, 8, 0, "hot words") : NULL;
    Triples out;
    if (!s.hot_words || triples_new(&out, 4 * s.m + 64)) {
        views_release(&v);
        return NULL;
    }
    release(&out);
    int status = loops->search(&s, &out);
    take_back(&out);
    views_release(&v);
    return triples_done(&out, status);
}

static PyObject *hot_copies(PyObject *self, PyObject *args) {
    PyObject *order, *offsets, *words;
    int64_t start, least;
    Py_ssize_t tables;
    if (!PyArg_ParseTuple(args, "OOLOLn", &order, &offsets, &start, &words, &least, &tables))
        return NULL;
    Views v = {.n = 0};
    Py_ssize_t n_order = items_of(order, 4), n_offsets = items_of(offsets, 4);
    Py_ssize_t n_words = items_of(words, 8);
    Py_ssize_t size = tables ? n_order / tables : 0, row = tables ? n_offsets / tables : 0;
    const uint32_t *ord = buffer_of(&v, order, size * tables, 4, 0, "order");
    const uint32_t *off = ord ? buffer_of(&v, offsets, row * tables, 4, 0, "offsets") : NULL;
    const uint64_t *w = off ? buffer_of(&v, words, n_words, 8, 0, "words") : NULL;
    if (!w) {
        views_release(&v);
        return NULL;
    }
    Py_ssize_t copied = 0, total = 0;
    for (Py_ssize_t t = 0; t < tables; t++)
        for (Py_ssize_t b = 0; b + 1 < row; b++)
            if ((int64_t)off[t * row + b + 1] - (int64_t)off[t * row + b] >= least) {
                copied++;
                total += off[t * row + b + 1] - off[t * row + b];
            }
    PyObject *ids = PyByteArray_FromStringAndSize(NULL, copied * 8);
    PyObject *firsts = PyByteArray_FromStringAndSize(NULL, (tables + 1) * 8);
    PyObject *at = PyByteArray_FromStringAndSize(NULL, copied * 8);
    PyObject *copy = PyByteArray_FromStringAndSize(NULL, total * 8);
    PyObject *result = NULL;
    if (ids && firsts && at && copy) {
        int64_t *i_ = (int64_t *)PyByteArray_AS_STRING(ids), *t_ = (int64_t *)PyByteArray_AS_STRING(firsts);
        int64_t *a_ = (int64_t *)PyByteArray_AS_STRING(at);
        uint64_t *c_ = (uint64_t *)PyByteArray_AS_STRING(copy);
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t i = 0, n = 0;
        t_[0] = 0;
        for (Py_ssize_t t = 0; t < tables; t++) {
            for (Py_ssize_t b = 0; b + 1 < row; b++) {
                int64_t lo = off[t * row + b], hi = off[t * row + b + 1];
                if (hi - lo < least)
                    continue;
                i_[i] = b;
                a_[i] = n;
                for (int64_t p = lo; p < hi; p++)
                    c_[n++] = w[(int64_t)ord[t * size + p] + start];
                i++;
            }
            t_[t + 1] = i;
        }
        Py_END_ALLOW_THREADS
        result = PyTuple_Pack(4, ids, firsts, at, copy);
    }
    Py_XDECREF(ids), Py_XDECREF(firsts), Py_XDECREF(at), Py_XDECREF(copy);
    views_release(&v);
    return result;
}

HOT int bucket_pairs_body(const uint32_t *order, const uint32_t *offsets, Py_ssize_t buckets, int64_t start,
                          const uint64_t *words, int64_t k, const uint64_t *rule, Triples *out, int wide) {
    Py_ssize_t cap = 64;
    uint64_t *gathered = malloc(8 * cap);
    int64_t *near = malloc(8 * cap);
    int status = -1;
    if (!gathered || !near)
        goto done;
    for (Py_ssize_t b = 0; b < buckets; b++) {
        int64_t lo = offsets[b], size = (int64_t)offsets[b + 1] - lo;
        if (size < 2)
            continue;
        if (size > cap) {
            Py_ssize_t c2 = cap;
            if (grow((void **)&gathered, &cap, size, 8) || grow((void **)&near, &c2, size, 8))
                goto done;
        }
        for (int64_t p = 0; p < size; p++)
            gathered[p] = words[(int64_t)order[lo + p] + start];
        for (int64_t a = 0; a + 1 < size; a++) {
            uint64_t value = gathered[a];
            Py_ssize_t hits = within(gathered + a + 1, value, size - a - 1, k, near, rule, wide);
            for (Py_ssize_t h = 0; h < hits; h++)
                if (append_pair(out, (int64_t)order[lo + a] + start, (int64_t)order[lo + a + 1 + near[h]] + start,
                                popcount(value ^ gathered[a + 1 + near[h]])))
                    goto done;
        }
    }
    status = 0;
done:
    free(gathered), free(near);
    return status;
}

static PyObject *table_pairs(PyObject *self, PyObject *args) {
    PyObject *order, *offsets, *words, *rule;
    int64_t start, k;
    if (!PyArg_ParseTuple(args, "OOLOLO", &order, &offsets, &start, &words, &k, &rule))
        return NULL;
    Views v = {.n = 0};
    Py_ssize_t n_order = items_of(order, 4), n_offsets = items_of(offsets, 4);
    Py_ssize_t n_words = items_of(words, 8);
    const uint32_t *ord = buffer_of(&v, order, n_order, 4, 0, "order");
    const uint32_t *off = ord ? buffer_of(&v, offsets, n_offsets, 4, 0, "offsets") : NULL;
    const uint64_t *w = off ? buffer_of(&v, words, n_words, 8, 0, "words") : NULL;
    const uint64_t *r = w ? buffer_of(&v, rule, RULE_WORDS, 8, 0, "rule") : NULL;
    /* Buckets that tile `order` from 0, rows inside `words` and below 2 ** PAIR_ROW_BITS, k
     * below 256 (a pair and its distance are packed in 64 bits): checked, as count, place
     * and sorted_runs check theirs (a review read past the arrays with inconsistent ones). */
    const char *bad = NULL;
    if (r && start < 0)
        bad = "a negative start";
    else if (r && (k < 0 || k > 255))
        bad = "k outside 0-255: a pair's distance is packed in 8 bits";
    else if (r && start > n_words) /* (start + a place wrapped past 2 ** 63: a review) */
        bad = "a row past the words";
    else if (r && (n_offsets < 1 || off[0] != 0 || off[n_offsets - 1] > n_order))
        bad = "offsets that are not buckets of the order";
    for (Py_ssize_t b = 0; r && !bad && b + 1 < n_offsets; b++)
        if (off[b] > off[b + 1])
            bad = "offsets that are not buckets of the order";
    for (Py_ssize_t p = 0; r && !bad && p < (n_offsets ? (Py_ssize_t)off[n_offsets - 1] : 0); p++)
        if (start + (int64_t)ord[p] >= n_words)
            bad = "a row past the words";
        else if (start + (int64_t)ord[p] >= (int64_t)1 << PAIR_ROW_BITS)
            bad = "rows past 2 ** 28: their pairs are packed in 64 bits";
    if (bad) {
        views_release(&v);
        PyErr_SetString(PyExc_ValueError, bad);
        return NULL;
    }
    Triples out;
    if (!r || columns_new(&out, 64, 1)) {
        views_release(&v);
        return NULL;
    }
    release(&out);
    int status = loops->bucket_pairs(ord, off, n_offsets - 1, start, w, k, r, &out);
    take_back(&out);
    views_release(&v);
    return triples_done(&out, status);
}

static const uint64_t EVERY_PAIR[RULE_WORDS] = {0}; /* a rule every pair within k meets */

HOT int every_pair_body(const uint64_t *queries, Py_ssize_t m, const uint64_t *words, Py_ssize_t n, int64_t k,
                        int after, Triples *out, int wide) {
    int64_t *near = malloc(8 * (n + 1));
    if (!near)
        return -1;
    for (Py_ssize_t q = 0; q < m; q++) {
        uint64_t value = queries[q];
        Py_ssize_t lo = after ? q + 1 : 0;
        if (lo > n)
            break;
        Py_ssize_t hits = within(words + lo, value, n - lo, k, near, EVERY_PAIR, wide);
        for (Py_ssize_t h = 0; h < hits; h++) {
            Py_ssize_t j = lo + near[h];
            if (append(out, q, j, popcount(words[j] ^ value))) {
                free(near);
                return -1;
            }
        }
    }
    free(near);
    return 0;
}

static PyObject *pairs(PyObject *self, PyObject *args) {
    PyObject *queries, *words;
    int64_t k;
    int after;
    if (!PyArg_ParseTuple(args, "OOLp", &queries, &words, &k, &after))
        return NULL;
    Views v = {.n = 0};
    Py_ssize_t m = items_of(queries, 8), n = items_of(words, 8);
    const uint64_t *q = buffer_of(&v, queries, m, 8, 0, "queries");
    const uint64_t *w = q ? buffer_of(&v, words, n, 8, 0, "words") : NULL;
    Triples out;
    if (!w || triples_new(&out, 4 * m + 64)) {
        views_release(&v);
        return NULL;
    }
    release(&out);
    int status = loops->every_pair(q, m, w, n, k, after, &out);
    take_back(&out);
    views_release(&v);
    return triples_done(&out, status);
}

/* ---------------------------------------------------------------- sketches */

#define CHUNK 8 /* pair_similarity's unit of work and of early rejection: 8 words, one cache line */

struct Similarity {
    const uint64_t *a, *b;
    const int64_t *a_rows, *b_rows, *visit;
    const uint8_t *a_has, *b_has; /* whether each row has a sketch; NULL: all have (pair_similarity) */
    Py_ssize_t a_count, b_count, words, pairs;
    Py_ssize_t ahead; /* the pair whose sketches are fetched while one is compared, this many on (0: none) */
    int bits, exact; /* exact: the most shingles an exact sketch holds (0: none are) */
    uint64_t lanes;
    double at_least;
    double *out;
};

/* The counts of words w .. w + count - 1 (count <= CHUNK) of two sketches, added to sums[3]:
 * bins that agree and are non-empty in x, non-empty in both, non-empty in either. */
HOT void chunk_counts(const uint64_t *x_row, const uint64_t *y_row, Py_ssize_t w, Py_ssize_t count, int bits,
                      uint64_t lanes, int64_t *sums) {
    for (Py_ssize_t e = w; e < w + count; e++) {
        uint64_t x = x_row[e], y = y_row[e], nonzero_x = x, nonzero_y = y, equal = ~(x ^ y);
        for (int i = 1; i < bits; i++) {
            nonzero_x |= x >> i;
            nonzero_y |= y >> i;
            equal &= ~(x ^ y) >> i;
        }
        nonzero_x &= lanes;
        nonzero_y &= lanes;
        sums[0] += popcount(equal & nonzero_x);
        sums[1] += popcount(nonzero_x & nonzero_y);
        sums[2] += popcount(nonzero_x | nonzero_y);
    }
}

#if X86
/* chunk_counts, the chunk's words at once in AVX-512. */
WIDE static inline void chunk_counts_wide(const uint64_t *x_row, const uint64_t *y_row, Py_ssize_t w,
                                          Py_ssize_t count, int bits, uint64_t lanes, int64_t *sums) {
    __mmask8 m = (__mmask8)(count >= 8 ? 0xFF : (1u << count) - 1);
    __m512i x = _mm512_maskz_loadu_epi64(m, x_row + w), y = _mm512_maskz_loadu_epi64(m, y_row + w);
    __m512i same = _mm512_xor_si512(_mm512_xor_si512(x, y), _mm512_set1_epi64(-1));
    __m512i nonzero_x = x, nonzero_y = y, equal = same;
    for (int i = 1; i < bits; i++) {
        __m128i shift = _mm_cvtsi32_si128(i);
        nonzero_x = _mm512_or_si512(nonzero_x, _mm512_srl_epi64(x, shift));
        nonzero_y = _mm512_or_si512(nonzero_y, _mm512_srl_epi64(y, shift));
        equal = _mm512_and_si512(equal, _mm512_srl_epi64(same, shift));
    }
    __m512i low = _mm512_set1_epi64((long long)lanes);
    nonzero_x = _mm512_and_si512(nonzero_x, low);
    nonzero_y = _mm512_and_si512(nonzero_y, low);
    sums[0] += _mm512_reduce_add_epi64(_mm512_popcnt_epi64(_mm512_and_si512(equal, nonzero_x)));
    sums[1] += _mm512_reduce_add_epi64(_mm512_popcnt_epi64(_mm512_and_si512(nonzero_x, nonzero_y)));
    sums[2] += _mm512_reduce_add_epi64(_mm512_popcnt_epi64(_mm512_or_si512(nonzero_x, nonzero_y)));
}
#endif

#define EXACT_MARK 0xAB5DFA9B6D7EAD76ULL /* sketch.EXACT_MARK: an exact sketch's first 8 bytes */
#define HELD 3                          /* sketch._HELD: uint32 words before its shingles */

/* Whether a row is an exact sketch (sketch.OnePermutation.exact_rows). */
static inline int is_exact(const uint64_t *row, int exact) {
    uint64_t count = row[1] & 0xFFFFFFFFu;
    return exact && row[0] == EXACT_MARK && count >= 1 && count <= (uint64_t)exact;
}

/* The Jaccard of two exact sketches' values (ascending, distinct): shared over either; with
 * at_least > 0, -1.0 once the values unshared so far prove it below that (as pair_similarity's
 * early rejection): rows of one template, whose 13 shingles have 3 of their own each, meet
 * a thousand kept ones a line, and most are rejected after a value or two. */
static double exact_jaccard(const uint64_t *x, const uint64_t *y, double at_least) {
    const uint32_t *vx = (const uint32_t *)x + HELD, *vy = (const uint32_t *)y + HELD;
    int64_t nx = (int64_t)(x[1] & 0xFFFFFFFFu), ny = (int64_t)(y[1] & 0xFFFFFFFFu), i = 0, j = 0, shared = 0;
    int64_t most = nx < ny ? nx : ny; /* shared values, at most */
    while (at_least > 0 ? (double)most / (double)(nx + ny - most) >= at_least && i < nx && j < ny
                        : i < nx && j < ny) {
        if (vx[i] == vy[j]) {
            shared++, i++, j++;
            continue;
        }
        if (vx[i] < vy[j])
            i++; /* vx[i] is not in y: x can share at most nx - (i - shared) */
        else
            j++;
        int64_t can = nx - (i - shared) < ny - (j - shared) ? nx - (i - shared) : ny - (j - shared);
        most = can < most ? can : most;
    }
    if (at_least > 0 && (double)most / (double)(nx + ny - most) < at_least)
        return -1.0;
    return (double)shared / (double)(nx + ny - shared);
}

/* The sketch of bins (`words` words of `bits`-bit codes) that an exact sketch stands for, in
 * out (sketch.OnePermutation._as_bins): a value's top bits pick its bin, the 16 below them
 * its minimum, and the values ascend, so a bin's first value is its least. */
static void exact_as_bins(const uint64_t *x, int bits, Py_ssize_t words, uint64_t *out) {
    int log2 = 0;
    while (((Py_ssize_t)1 << log2) < words * 64 / bits)
        log2++;
    const uint32_t *v = (const uint32_t *)x + HELD;
    int64_t n = (int64_t)(x[1] & 0xFFFFFFFFu), codes = ((int64_t)1 << bits) - 1;
    memset(out, 0, (size_t)words * 8);
    for (int64_t i = 0; i < n; i++) {
        uint64_t bin = v[i] >> (32 - log2), least = (v[i] >> (16 - log2)) & 0xFFFF, at = bin * (uint64_t)bits;
        if (least > 0xFFFE)
            least = 0xFFFE;
        if (!((out[at / 64] >> (at % 64)) & (uint64_t)codes))
            out[at / 64] |= ((((least & 0xFF) * (uint64_t)codes) >> 8) + 1) << (at % 64);
    }
}

HOT int similarities_body(const Similarity *s, int wide) {
    int64_t codes = ((int64_t)1 << s->bits) - 1;
    Py_ssize_t words = s->words, chunks = (words + CHUNK - 1) / CHUNK;
    /* left[r * (chunks + 1) + c]: a's row r's non-empty bins in chunks c.., counted when a
     * pair of row r first needs them (ready[r]): a search of a small run has few pairs. */
    int64_t *left = calloc((size_t)(s->a_count * (chunks + 1) + 1), 8);
    char *ready = calloc((size_t)s->a_count + 1, 1);
    uint64_t *bins = malloc((size_t)words * 8 * 2); /* an exact sketch of each side, as bins */
    if (!left || !ready || !bins) {
        free(left), free(ready), free(bins);
        return -1;
    }
    for (Py_ssize_t v = 0; v < s->pairs; v++) {
        int64_t t = s->visit ? s->visit[v] : v, ra = s->a_rows[t], rb = s->b_rows[t];
        if (s->ahead && v + s->ahead < s->pairs) {
            /* A large b's rows are far apart in memory: each pair waited on its first reads.
             * A pair's first two cache lines (most pairs are rejected by then) and its flag
             * are asked for `ahead` pairs before it is compared, so that the reads overlap. */
            int64_t next = s->visit ? s->visit[v + s->ahead] : v + s->ahead;
            const char *y = (const char *)(s->b + s->b_rows[next] * words);
            __builtin_prefetch(y);
            __builtin_prefetch(y + 64);
            __builtin_prefetch(s->a + s->a_rows[next] * words);
            if (s->b_has)
                __builtin_prefetch(s->b_has + s->b_rows[next]);
        }
        if (s->a_has && !(s->a_has[ra] && s->b_has[rb])) {
            s->out[t] = NAN; /* a side without a sketch: decided on the fingerprint */
            continue;
        }
        const uint64_t *x_row = s->a + ra * words, *y_row = s->b + rb * words;
        int x_exact = is_exact(x_row, s->exact), y_exact = is_exact(y_row, s->exact);
        if (x_exact && y_exact) {
            s->out[t] = exact_jaccard(x_row, y_row, s->at_least);
            continue;
        }
        if (x_exact)
            exact_as_bins(x_row, s->bits, words, bins), x_row = bins;
        if (y_exact)
            exact_as_bins(y_row, s->bits, words, bins + words), y_row = bins + words;
        /* Early rejection counts a's bins left once a row; a side of one pair's own bins is read whole. */
        int early = s->at_least > 0 && !x_exact && !y_exact;
        if (early && !ready[ra]) {
            int64_t *row = left + ra * (chunks + 1);
            for (Py_ssize_t w = words - 1; w >= 0; w--) {
                uint64_t x = s->a[ra * words + w], nonzero = x;
                for (int i = 1; i < s->bits; i++)
                    nonzero |= x >> i;
                row[w / CHUNK] += popcount(nonzero & s->lanes);
            }
            for (Py_ssize_t c = chunks - 1; c >= 0; c--)
                row[c] += row[c + 1];
            ready[ra] = 1;
        }
        int64_t sums[3] = {0, 0, 0}; /* agree, both, either */
        int rejected = 0;
        for (Py_ssize_t c = 0; c < chunks; c++) {
            Py_ssize_t w = c * CHUNK, count = words - w < CHUNK ? words - w : CHUNK;
#if X86
            if (wide)
                chunk_counts_wide(x_row, y_row, w, count, s->bits, s->lanes, sums);
            else
#endif
                chunk_counts(x_row, y_row, w, count, s->bits, s->lanes, sums);
            int64_t agree = sums[0], both = sums[1], either = sums[2];
            if (early && c + 1 < chunks) {
                int64_t r = left[ra * (chunks + 1) + c + 1];
                int64_t bound_den = (codes - 1) * (either + r);
                if (bound_den > 0 &&
                    (double)(codes * agree - both + (codes - 1) * r) / (double)bound_den < s->at_least) {
                    rejected = 1;
                    break;
                }
            }
        }
        int64_t agree = sums[0], both = sums[1], either = sums[2];
        if (rejected) {
            s->out[t] = -1.0;
        } else if (either == 0) {
            s->out[t] = 1.0;
        } else {
            int64_t den = either * (codes - 1);
            double estimate = (double)(codes * agree - both) / (double)(den > 1 ? den : 1);
            s->out[t] = estimate < 0.0 ? 0.0 : estimate > 1.0 ? 1.0 : estimate;
        }
    }
    free(left), free(ready), free(bins);
    return 0;
}

/* The sketches a and b (rows of s->words uint64 words) viewed into s: 1, or 0 with an exception. */
static int sketches_of(Views *v, Similarity *s, PyObject *a, PyObject *b) {
    if (s->words < 1 || s->bits < 1 || s->bits > 8) {
        PyErr_SetString(PyExc_ValueError, "sketches of one word or more, codes of 1 to 8 bits");
        return 0;
    }
    if (s->exact < 0 || (s->exact && (HELD + s->exact > s->words * 2 || (s->words * 64 / s->bits) > 1 << 16))) {
        PyErr_SetString(PyExc_ValueError, "exact sketches of 0 shingles or more, as many as a sketch holds");
        return 0;
    }
    if (s->ahead < 0) {
        PyErr_SetString(PyExc_ValueError, "ahead: 0 pairs or more");
        return 0;
    }
    s->a_count = items_of(a, 8 * s->words);
    s->b_count = items_of(b, 8 * s->words);
    s->a = buffer_of(v, a, s->a_count * s->words, 8, 0, "a");
    s->b = s->a ? buffer_of(v, b, s->b_count * s->words, 8, 0, "b") : NULL;
    return s->b != NULL;
}

static PyObject *pair_similarity(PyObject *self, PyObject *args) {
    PyObject *a, *a_rows, *b, *b_rows, *visit, *out;
    Similarity s;
    unsigned long long lanes;
    if (!PyArg_ParseTuple(args, "OOOOiiKdOnnO", &a, &a_rows, &b, &b_rows, &s.bits, &s.exact, &lanes, &s.at_least,
                          &visit, &s.words, &s.ahead, &out))
        return NULL;
    s.lanes = lanes;
    s.a_has = s.b_has = NULL;
    Views v = {.n = 0};
    s.pairs = items_of(visit, 8);
    int given = sketches_of(&v, &s, a, b);
    s.a_rows = given ? buffer_of(&v, a_rows, s.pairs, 8, 0, "a_rows") : NULL;
    s.b_rows = s.a_rows ? buffer_of(&v, b_rows, s.pairs, 8, 0, "b_rows") : NULL;
    s.visit = s.b_rows ? buffer_of(&v, visit, s.pairs, 8, 0, "visit") : NULL;
    s.out = s.visit ? buffer_of(&v, out, s.pairs, 8, 1, "out") : NULL;
    if (!s.out) {
        views_release(&v);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < s.pairs; i++) {
        int64_t t = s.visit[i];
        if (t < 0 || t >= s.pairs || s.a_rows[t] < 0 || s.a_rows[t] >= s.a_count || s.b_rows[t] < 0 ||
            s.b_rows[t] >= s.b_count) {
            views_release(&v);
            PyErr_Format(PyExc_IndexError, "pair %zd: a row outside the sketches", i);
            return NULL;
        }
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = loops->similarities(&s);
    Py_END_ALLOW_THREADS
    views_release(&v);
    if (status)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* The pairs (a_rows, rows) copied to (pa, pb), with their places in `place`, by groups
 * of rows >> shift, ascending, each group in the pairs' order: read in this order, each
 * group's sketches of b are read together. A counting sort; -1 where memory ran out. */
static int by_row_group(const int64_t *a_rows, const int64_t *rows, Py_ssize_t n, int shift, int64_t *pa,
                        int64_t *pb, int64_t *place) {
    int64_t groups = 0;
    for (Py_ssize_t t = 0; t < n; t++)
        if ((rows[t] >> shift) + 1 > groups)
            groups = (rows[t] >> shift) + 1;
    int64_t *at = calloc((size_t)groups + 1, 8);
    if (!at)
        return -1;
    for (Py_ssize_t t = 0; t < n; t++)
        at[(rows[t] >> shift) + 1]++;
    for (int64_t g = 0; g < groups; g++)
        at[g + 1] += at[g];
    for (Py_ssize_t t = 0; t < n; t++) {
        int64_t v = at[rows[t] >> shift]++;
        pa[v] = a_rows[t], pb[v] = rows[t], place[v] = t;
    }
    free(at);
    return 0;
}

/* compiled.verified_pairs: of a search's pairs (q, row, d), those whose sketches a[q] and
 * b[row] may reach at_least (or where either has none), with their similarities. */
static PyObject *verified_pairs(PyObject *self, PyObject *args) {
    PyObject *q, *rows, *d, *a, *a_has, *b, *b_has;
    Similarity s;
    unsigned long long lanes;
    int shift;
    Py_ssize_t grouped, cached;
    if (!PyArg_ParseTuple(args, "OOOOOOOiiKdninnn", &q, &rows, &d, &a, &a_has, &b, &b_has, &s.bits, &s.exact,
                          &lanes, &s.at_least, &s.words, &shift, &grouped, &cached, &s.ahead))
        return NULL;
    s.lanes = lanes;
    if (shift < 0 || shift > 62) {
        PyErr_SetString(PyExc_ValueError, "a shift of 0 to 62 bits");
        return NULL;
    }
    Views v = {.n = 0};
    s.pairs = items_of(q, 8);
    int given = sketches_of(&v, &s, a, b);
    s.a_has = given ? buffer_of(&v, a_has, s.a_count, 1, 0, "a_has") : NULL;
    s.b_has = s.a_has ? buffer_of(&v, b_has, s.b_count, 1, 0, "b_has") : NULL;
    s.a_rows = s.b_has ? buffer_of(&v, q, s.pairs, 8, 0, "q") : NULL;
    s.b_rows = s.a_rows ? buffer_of(&v, rows, s.pairs, 8, 0, "rows") : NULL;
    const int64_t *ds = s.b_rows ? buffer_of(&v, d, s.pairs, 8, 0, "d") : NULL;
    if (!ds) {
        views_release(&v);
        return NULL;
    }
    for (Py_ssize_t t = 0; t < s.pairs; t++)
        if (s.a_rows[t] < 0 || s.a_rows[t] >= s.a_count || s.b_rows[t] < 0 || s.b_rows[t] >= s.b_count) {
            views_release(&v);
            PyErr_Format(PyExc_IndexError, "pair %zd: a row outside the sketches", t);
            return NULL;
        }
    /* Many pairs are read by groups of rows of b (by_row_group), from copies in that
     * order (read through a permutation, each pair's row numbers cost cache misses). */
    int grouping = s.pairs >= grouped && s.b_count * s.words * 8 > cached;
    if (grouping) { /* only if the rows met would not stay in a cache of `cached` bytes */
        uint64_t *met = calloc((size_t)s.b_count / 64 + 1, 8);
        if (!met) {
            views_release(&v);
            return PyErr_NoMemory();
        }
        Py_ssize_t distinct = 0;
        for (Py_ssize_t t = 0; t < s.pairs; t++) {
            uint64_t bit = (uint64_t)1 << (s.b_rows[t] & 63);
            distinct += !(met[s.b_rows[t] >> 6] & bit);
            met[s.b_rows[t] >> 6] |= bit;
        }
        free(met);
        grouping = distinct * s.words * 8 > cached;
    }
    size_t bytes = 8 * (size_t)s.pairs + 8;
    double *out = malloc(bytes);
    int64_t *pa = grouping ? malloc(bytes) : NULL, *pb = grouping ? malloc(bytes) : NULL;
    int64_t *place = grouping ? malloc(bytes) : NULL;
    int status = -1;
    Py_ssize_t kept = 0;
    if (out && (!grouping || (pa && pb && place))) {
        Py_BEGIN_ALLOW_THREADS
        status = grouping ? by_row_group(s.a_rows, s.b_rows, s.pairs, shift, pa, pb, place) : 0;
        if (grouping)
            s.a_rows = pa, s.b_rows = pb;
        s.visit = NULL;
        s.out = out;
        if (!status)
            status = loops->similarities(&s);
        for (Py_ssize_t t = 0; t < s.pairs && !status; t++)
            kept += isnan(out[t]) || out[t] >= s.at_least;
        Py_END_ALLOW_THREADS
    }
    PyObject *col[4] = {NULL, NULL, NULL, NULL}, *result = NULL;
    for (int c = 0; c < 4 && !status; c++)
        if (!(col[c] = PyByteArray_FromStringAndSize(NULL, kept * 8)))
            status = -1;
    if (!status) {
        int64_t *q_ = (int64_t *)PyByteArray_AS_STRING(col[0]), *r_ = (int64_t *)PyByteArray_AS_STRING(col[1]);
        int64_t *d_ = (int64_t *)PyByteArray_AS_STRING(col[2]);
        double *s_ = (double *)PyByteArray_AS_STRING(col[3]);
        Py_ssize_t n = 0;
        for (Py_ssize_t t = 0; t < s.pairs; t++)
            if (isnan(out[t]) || out[t] >= s.at_least) {
                q_[n] = s.a_rows[t], r_[n] = s.b_rows[t], d_[n] = ds[grouping ? place[t] : t], s_[n] = out[t];
                n++;
            }
        result = PyTuple_Pack(4, col[0], col[1], col[2], col[3]);
    }
    for (int c = 0; c < 4; c++)
        Py_XDECREF(col[c]);
    free(out), free(pa), free(pb), free(place);
    views_release(&v);
    if (!result && !PyErr_Occurred())
        PyErr_NoMemory();
    return result;
}

/* ---------------------------------------------------------------- the loops of each kind of CPU */

#define SEARCH_ARGS (const Search *s, Triples *out)
#define BUCKET_ARGS                                                                                             \
    (const uint32_t *order, const uint32_t *offsets, Py_ssize_t buckets, int64_t start, const uint64_t *words, \
     int64_t k, const uint64_t *rule, Triples *out)
#define EVERY_ARGS                                                                                              \
    (const uint64_t *queries, Py_ssize_t m, const uint64_t *words, Py_ssize_t n, int64_t k, int after, Triples *out)
#define SIMILAR_ARGS (const Similarity *s)
#define KIND(kind, attribute, wide)                                                                             \
    attribute static int search_##kind SEARCH_ARGS { return search_body(s, out, wide); }                       \
    attribute static int bucket_pairs_##kind BUCKET_ARGS {                                                      \
        return bucket_pairs_body(order, offsets, buckets, start, words, k, rule, out, wide);                    \
    }                                                                                                           \
    attribute static int every_pair_##kind EVERY_ARGS {                                                         \
        return every_pair_body(queries, m, words, n, k, after, out, wide);                                      \
    }                                                                                                           \
    attribute static int similarities_##kind SIMILAR_ARGS { return similarities_body(s, wide); }

KIND(generic, , 0)
#if X86
KIND(popcnt, POPCNT, 0)
KIND(avx512, WIDE, 1)
#endif

static const Loops KINDS[] = {
#if X86
    {"avx512", search_avx512, bucket_pairs_avx512, every_pair_avx512, similarities_avx512},
    {"popcnt", search_popcnt, bucket_pairs_popcnt, every_pair_popcnt, similarities_popcnt},
#endif
    {"generic", search_generic, bucket_pairs_generic, every_pair_generic, similarities_generic},
};
#define KINDS_N ((int)(sizeof(KINDS) / sizeof(*KINDS)))

/* Whether this CPU runs the loops of KINDS[i]. */
static int runs(int i) {
#if X86
    __builtin_cpu_init();
    if (!strcmp(KINDS[i].name, "avx512"))
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq") &&
               __builtin_cpu_supports("popcnt");
    if (!strcmp(KINDS[i].name, "popcnt"))
        return __builtin_cpu_supports("popcnt");
#endif
    return 1;
}

static PyObject *use(PyObject *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    for (int i = 0; i < KINDS_N; i++)
        if (!strcmp(KINDS[i].name, name)) {
            if (!runs(i))
                return PyErr_Format(PyExc_ValueError, "this CPU does not run the %s loops", name);
            loops = &KINDS[i];
            Py_RETURN_NONE;
        }
    return PyErr_Format(PyExc_ValueError, "no loops named %s", name);
}

static PyObject *kinds(PyObject *self, PyObject *args) {
    PyObject *out = PyList_New(0);
    for (int i = 0; out && i < KINDS_N; i++) {
        PyObject *name = runs(i) ? PyUnicode_FromString(KINDS[i].name) : NULL;
        if (runs(i) && (!name || PyList_Append(out, name) < 0))
            Py_CLEAR(out); /* name released once, below (it was twice: a review) */
        Py_XDECREF(name);
    }
    return out;
}

static PyObject *in_use(PyObject *self, PyObject *args) { return PyUnicode_FromString(loops->name); }

/* ---------------------------------------------------------------- pairs in order */

/* Runs up to this long are sorted by insertion, longer ones by radix. */
#define INSERTION_MAX 48

static void insertion_sort(int64_t *a, int64_t n) {
    for (int64_t x = 1; x < n; x++) {
        int64_t v = a[x], y = x;
        for (; y > 0 && a[y - 1] > v; y--)
            a[y] = a[y - 1];
        a[y] = v;
    }
}

/* a[0:n] in ascending order of their bytes from `low` up (0: whole values; equal ones keep
 * their order): least significant byte first, through `scratch` (n values), skipping the
 * bytes that every value shares. The sign bit is flipped in the keys, so that their
 * unsigned order is the values' signed one. qsort with a comparison function took 1.63 s
 * of the 3.73 s that all pairs of 1M corpus fingerprints at k = 3 took (25.7M pairs, runs
 * of up to thousands where fingerprints crowd together). */
static void radix_sort(int64_t *a, int64_t n, int64_t *scratch, int low) {
    const uint64_t flip = 1ULL << 63;
    uint64_t any = 0, all = ~0ULL;
    for (int64_t x = 0; x < n; x++) {
        any |= (uint64_t)a[x] ^ flip;
        all &= (uint64_t)a[x] ^ flip;
    }
    uint64_t differ = any ^ all;
    int64_t *from = a, *to = scratch;
    for (int shift = 8 * low; shift < 64; shift += 8) {
        if (!((differ >> shift) & 0xFF))
            continue;
        int64_t at[256] = {0};
        for (int64_t x = 0; x < n; x++)
            at[(((uint64_t)from[x] ^ flip) >> shift) & 0xFF]++;
        for (int64_t b = 0, sum = 0; b < 256; b++) {
            int64_t c = at[b];
            at[b] = sum;
            sum += c;
        }
        for (int64_t x = 0; x < n; x++)
            to[at[(((uint64_t)from[x] ^ flip) >> shift) & 0xFF]++] = from[x];
        int64_t *was = from;
        from = to;
        to = was;
    }
    if (from != a)
        memcpy(a, from, sizeof(int64_t) * n);
}

/* Of pairs packed as append_pair packs them: count(pairs, bounds): bounds[i + 1] += how many
 * pairs have i. place(pairs, at, j): each j << 8 | d at its i's next place. sorted_runs(j,
 * bounds, i, d): each run of j << 8 | d sorted (by j: a run's j are distinct), then its i,
 * j and d written out. */
static PyObject *count(PyObject *self, PyObject *args) {
    PyObject *k, *b;
    if (!PyArg_ParseTuple(args, "OO", &k, &b))
        return NULL;
    Views v = {.n = 0};
    Py_ssize_t n = items_of(k, 8), nb = items_of(b, 8);
    const uint64_t *pairs = buffer_of(&v, k, n, 8, 0, "pairs");
    int64_t *bounds = pairs ? buffer_of(&v, b, nb, 8, 1, "bounds") : NULL;
    int bad = 0;
    if (bounds) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t t = 0; t < n && !bad; t++) {
            int64_t i = (int64_t)(pairs[t] >> PAIR_I_SHIFT);
            if (i + 1 >= nb)
                bad = 1;
            else
                bounds[i + 1]++;
        }
        Py_END_ALLOW_THREADS
    }
    return filled(&v, bounds, bad ? "a pair's i outside the bounds" : NULL);
}

static PyObject *place(PyObject *self, PyObject *args) {
    PyObject *p_, *a_, *j_;
    if (!PyArg_ParseTuple(args, "OOO", &p_, &a_, &j_))
        return NULL;
    Views v = {.n = 0};
    Py_ssize_t n = items_of(p_, 8), nat = items_of(a_, 8), nj = items_of(j_, 8);
    const uint64_t *pairs = buffer_of(&v, p_, n, 8, 0, "pairs");
    int64_t *at = pairs ? buffer_of(&v, a_, nat, 8, 1, "at") : NULL;
    int64_t *j = at ? buffer_of(&v, j_, nj, 8, 1, "j") : NULL;
    int bad = 0;
    if (j) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t t = 0; t < n && !bad; t++) {
            int64_t i = (int64_t)(pairs[t] >> PAIR_I_SHIFT);
            if (i >= nat || at[i] < 0 || at[i] >= nj)
                bad = 1;
            else
                j[at[i]++] = (int64_t)(pairs[t] & ((1ULL << PAIR_I_SHIFT) - 1));
        }
        Py_END_ALLOW_THREADS
    }
    return filled(&v, j, bad ? "a pair outside its run" : NULL);
}

static PyObject *sorted_runs(PyObject *self, PyObject *args) {
    PyObject *p_, *b_, *i_, *d_;
    if (!PyArg_ParseTuple(args, "OOOO", &p_, &b_, &i_, &d_))
        return NULL;
    Views v = {.n = 0};
    Py_ssize_t n = items_of(p_, 8), nb = items_of(b_, 8);
    int64_t *packed = buffer_of(&v, p_, n, 8, 1, "j");
    const int64_t *bounds = packed ? buffer_of(&v, b_, nb, 8, 0, "bounds") : NULL;
    int64_t *i = bounds ? buffer_of(&v, i_, n, 8, 1, "i") : NULL;
    int64_t *d = i ? buffer_of(&v, d_, n, 8, 1, "d") : NULL;
    int bad = 0;
    if (d) {
        if (nb < 1 || bounds[0] != 0 || bounds[nb - 1] != n) /* runs that tile j */
            bad = 1;
        for (Py_ssize_t x = 0; x + 1 < nb; x++)
            if (bounds[x] < 0 || bounds[x] > bounds[x + 1] || bounds[x + 1] > n)
                bad = 1;
        int64_t longest = 0;
        for (Py_ssize_t x = 0; x + 1 < nb && !bad; x++)
            if (bounds[x + 1] - bounds[x] > longest)
                longest = bounds[x + 1] - bounds[x];
        int64_t *scratch = NULL;
        if (!bad && longest > INSERTION_MAX && !(scratch = malloc(sizeof(int64_t) * longest))) {
            views_release(&v);
            return PyErr_NoMemory();
        }
        if (!bad) {
            Py_BEGIN_ALLOW_THREADS
            for (Py_ssize_t x = 0; x + 1 < nb; x++) {
                int64_t lo = bounds[x], hi = bounds[x + 1];
                if (hi - lo > INSERTION_MAX)
                    radix_sort(packed + lo, hi - lo, scratch, 0);
                else
                    insertion_sort(packed + lo, hi - lo);
                for (int64_t t = lo; t < hi; t++) {
                    i[t] = x;
                    d[t] = packed[t] & 0xFF;
                    if ((packed[t] >>= 8) < 0 || packed[t] >= nb - 1)
                        bad = 1;
                }
            }
            Py_END_ALLOW_THREADS
        }
        free(scratch);
    }
    return filled(&v, d, bad ? "bounds that are not runs of the pairs, or a j past them" : NULL);
}

static PyMethodDef methods[] = {
    {"near_here", near_here_of, METH_VARARGS, "near_here(x, k, rule): the test search_run makes of a candidate whose XOR is x"},
    {"use", use, METH_VARARGS, "use(name): the loops of that kind of CPU from now on (one of kinds())"},
    {"kinds", kinds, METH_NOARGS, "kinds(): the kinds of loops this CPU runs, fastest first"},
    {"in_use", in_use, METH_NOARGS, "in_use(): the kind of loops in use"},
    {"key_hashes", key_hashes, METH_VARARGS, "key_hashes(words, starts, masks, mix, p, out)"},
    {"top_order", top_order, METH_VARARGS, "top_order(hashes, top, order)"},
    {"build_table", build_table, METH_VARARGS, "build_table(buckets, order, offsets)"},
    {"search_run", search_run, METH_VARARGS, "search_run(order, offsets, start, p, hashes, by_hash, words, queries, k, rules, t_lo, t_hi, hot_ids, hot_tables, hot_at, hot_words, least, tables, m)"},
    {"hot_copies", hot_copies, METH_VARARGS, "hot_copies(order, offsets, start, words, least, tables)"},
    {"table_pairs", table_pairs, METH_VARARGS, "table_pairs(order, offsets, start, words, k, rule)"},
    {"pairs", pairs, METH_VARARGS, "pairs(queries, words, k, after)"},
    {"pair_similarity", pair_similarity, METH_VARARGS, "pair_similarity(a, a_rows, b, b_rows, bits, exact, lanes, at_least, visit, words, ahead, out)"},
    {"verified_pairs", verified_pairs, METH_VARARGS, "verified_pairs(q, rows, d, a, a_has, b, b_has, bits, exact, lanes, at_least, words, shift, grouped, cached, ahead)"},
    {"count", count, METH_VARARGS, "count(pairs, bounds)"},
    {"place", place, METH_VARARGS, "place(pairs, at, j)"},
    {"sorted_runs", sorted_runs, METH_VARARGS, "sorted_runs(j, bounds, i, d)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "simdedup._indexcore",
    "Compiled loops for the index and verification: see simdedup/compiled.py.", -1, methods,
};

PyMODINIT_FUNC PyInit__indexcore(void) {
    for (int i = KINDS_N - 1; i >= 0; i--) /* the fastest this CPU runs */
        if (runs(i))
            loops = &KINDS[i];
    PyObject *m = PyModule_Create(&module), *mark = m ? PyLong_FromUnsignedLongLong(EXACT_MARK) : NULL;
    /* The constants it shares with sketch.py, for the tests to compare. */
    if (m && (!mark || PyModule_AddObjectRef(m, "EXACT_MARK", mark) || PyModule_AddIntConstant(m, "HELD", HELD))) {
        Py_XDECREF(mark);
        Py_DECREF(m);
        return NULL;
    }
    Py_XDECREF(mark);
    return m;
}
