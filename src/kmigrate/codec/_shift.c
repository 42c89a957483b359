/* The records of one uncompressed Kafka record batch (magic 2), each record's timestamp
 * and offset deltas moved by a constant: the inner loop of kmigrate.codec.batch_merge,
 * which has the same loop in Python (used where this module is not built) and whose
 * docstring says what a merged batch is. A record is
 *
 *   length varint, attributes int8, timestampDelta varlong, offsetDelta varint, rest
 *
 * and only the three varints change; `rest` (key, value, headers) is copied as it is.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define LONGEST_GROWTH 25 /* a record's varints grow by at most 4 + 9 + 9 bytes */

static int read_varint(const unsigned char *data, Py_ssize_t end, Py_ssize_t *at, int64_t *value)
{
    uint64_t result = 0;
    int shift = 0;
    for (;;) {
        if (*at >= end || shift > 63)
            return -1;
        unsigned char byte = data[(*at)++];
        result |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80))
            break;
        shift += 7;
    }
    *value = (int64_t)((result >> 1) ^ (~(result & 1) + 1)); /* zig-zag */
    return 0;
}

static Py_ssize_t write_varint(unsigned char *out, int64_t value)
{
    uint64_t zigzag = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
    Py_ssize_t n = 0;
    while (zigzag >= 0x80) {
        out[n++] = (unsigned char)((zigzag & 0x7F) | 0x80);
        zigzag >>= 7;
    }
    out[n++] = (unsigned char)zigzag;
    return n;
}

PyDoc_STRVAR(shifted_doc,
             "shifted(records, count, shift_ts, shift_offset) -> bytes\n\n"
             "``count`` records of ``records`` with their timestamp and offset deltas moved "
             "by ``shift_ts`` and ``shift_offset``.");

static PyObject *shifted(PyObject *self, PyObject *args)
{
    Py_buffer buffer;
    Py_ssize_t count;
    long long shift_ts, shift_offset;
    if (!PyArg_ParseTuple(args, "y*nLL", &buffer, &count, &shift_ts, &shift_offset))
        return NULL;
    const unsigned char *data = buffer.buf;
    Py_ssize_t size = buffer.len;
    if (count < 0 || count > size) {
        PyBuffer_Release(&buffer);
        PyErr_SetString(PyExc_ValueError, "more records than bytes");
        return NULL;
    }
    PyObject *result = PyBytes_FromStringAndSize(NULL, size + count * LONGEST_GROWTH);
    if (result == NULL) {
        PyBuffer_Release(&buffer);
        return NULL;
    }
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(result);
    Py_ssize_t at = 0, written = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, timestamp, offset;
        if (read_varint(data, size, &at, &length) < 0 || length < 1 || length > size - at)
            goto cut_short;
        Py_ssize_t end = at + (Py_ssize_t)length, rest = at + 1;
        if (read_varint(data, end, &rest, &timestamp) < 0 ||
            read_varint(data, end, &rest, &offset) < 0)
            goto cut_short;
        unsigned char deltas[20];
        Py_ssize_t n = write_varint(deltas, timestamp + shift_ts);
        n += write_varint(deltas + n, offset + shift_offset);
        written += write_varint(out + written, 1 + n + (end - rest));
        out[written++] = data[at]; /* the record's attributes */
        memcpy(out + written, deltas, n);
        written += n;
        memcpy(out + written, data + rest, end - rest);
        written += end - rest;
        at = end;
    }
    PyBuffer_Release(&buffer);
    if (_PyBytes_Resize(&result, written) < 0)
        return NULL;
    return result;
cut_short:
    PyBuffer_Release(&buffer);
    Py_DECREF(result);
    PyErr_SetString(PyExc_ValueError, "a record is cut short");
    return NULL;
}

static PyMethodDef methods[] = {
    {"shifted", shifted, METH_VARARGS, shifted_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_shift", "kmigrate.codec.batch_merge's inner loop, in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__shift(void) { return PyModule_Create(&module); }
