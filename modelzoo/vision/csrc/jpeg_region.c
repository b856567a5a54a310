/* Decode one rectangle of a JPEG image with libjpeg-turbo's libjpeg API: rows above it are
 * skipped (entropy-decoded, never transformed or colour-converted), columns outside it are never
 * transformed (jpeg_crop_scanline), and decoding stops after its last row. TurboJPEG 2.x, which
 * the whole-image decode uses, has no region decode; this is its libjpeg layer, so the pixels
 * are the same (JDCT_ISLOW, fancy upsampling: TurboJPEG's defaults).
 *
 * libjpeg reports errors by calling error_exit, which must not return: it longjmps back here,
 * so no Rust frame is ever unwound through. */
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h>

struct region_error {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char *message;
    size_t message_len;
    int warnings;
};

static void region_error_exit(j_common_ptr cinfo) {
    struct region_error *err = (struct region_error *)cinfo->err;
    char text[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, text);
    if (err->message_len > 0) snprintf(err->message, err->message_len, "%s", text);
    longjmp(err->jump, 1);
}

/* Warnings (a corrupt entropy segment, a premature end of data) are where libjpeg would go on
 * with made-up pixels; like the whole-image decode (and PIL), treat them as errors. */
static void region_emit_message(j_common_ptr cinfo, int level) {
    if (level < 0) region_error_exit(cinfo);
}

/* Decodes rows [top, top + height) and columns [left, left + width) of the image scaled by
 * 1/reduce (1, 2, 4 or 8), into `out` (capacity `out_len` bytes) as RGB rows of
 * `*out_width * 3` bytes. On return `*out_left` and `*out_width` are the columns actually
 * decoded: libjpeg moves the left edge down to an iMCU boundary and widens the row to match.
 * Returns 0, or -1 with a message in `message` (a corrupt file, a region outside the image,
 * a buffer too small). `*scaled_width` / `*scaled_height` receive the scaled image's size
 * (also on failure when the header was read). */
int mz_jpeg_decode_region(const unsigned char *data, unsigned long len, unsigned reduce,
                          unsigned left, unsigned top, unsigned width, unsigned height,
                          unsigned char *out, size_t out_len, unsigned *out_left,
                          unsigned *out_width, unsigned *scaled_width, unsigned *scaled_height,
                          char *message, size_t message_len) {
    struct jpeg_decompress_struct cinfo;
    struct region_error err;
    memset(&cinfo, 0, sizeof cinfo);
    memset(&err, 0, sizeof err);
    err.message = message;
    err.message_len = message_len;
    if (message_len > 0) message[0] = '\0';
    cinfo.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = region_error_exit;
    err.mgr.emit_message = region_emit_message;
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, len);
    jpeg_read_header(&cinfo, TRUE);
    cinfo.out_color_space = JCS_RGB;
    cinfo.scale_num = 1;
    cinfo.scale_denom = reduce;
    cinfo.dct_method = JDCT_ISLOW;
    cinfo.do_fancy_upsampling = TRUE;
    jpeg_calc_output_dimensions(&cinfo);
    *scaled_width = cinfo.output_width;
    *scaled_height = cinfo.output_height;
    if (width == 0 || height == 0 || left >= cinfo.output_width ||
        width > cinfo.output_width - left || top >= cinfo.output_height ||
        height > cinfo.output_height - top) {
        snprintf(message, message_len, "region %ux%u at (%u, %u) is outside the %ux%u image",
                 width, height, left, top, cinfo.output_width, cinfo.output_height);
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    jpeg_start_decompress(&cinfo);
    JDIMENSION x = left, w = width;
    if (x != 0 || w != cinfo.output_width) jpeg_crop_scanline(&cinfo, &x, &w);
    size_t pitch = (size_t)cinfo.output_width * 3;
    if (pitch * height > out_len) {
        snprintf(message, message_len, "a %ux%u region needs %zu bytes, the buffer has %zu",
                 cinfo.output_width, height, pitch * height, out_len);
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    *out_left = x;
    *out_width = cinfo.output_width;
    if (top > 0) jpeg_skip_scanlines(&cinfo, top);
    for (unsigned row = 0; row < height;) {
        JSAMPROW rows[8];
        unsigned n = 0;
        for (; n < 8 && row + n < height; n++) rows[n] = out + (size_t)(row + n) * pitch;
        JDIMENSION got = jpeg_read_scanlines(&cinfo, rows, n);
        if (got == 0) {
            snprintf(message, message_len, "no scanline after row %u", top + row);
            jpeg_destroy_decompress(&cinfo);
            return -1;
        }
        row += got;
    }
    /* The rows below the region are never decoded. */
    jpeg_abort_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return 0;
}
