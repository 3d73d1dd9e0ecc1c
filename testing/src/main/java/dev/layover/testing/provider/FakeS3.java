package dev.layover.testing.provider;

import com.sun.net.httpserver.HttpExchange;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The few S3 calls a batch transport makes, path-style below the fake's {@code /s3/}: AWS SDK v2's
 * {@code S3Client} with {@code endpointOverride(base + "/s3")} and {@code forcePathStyle(true)}
 * reaches {@code /s3/{bucket}/{key}}. Every bucket exists. The fake's Bedrock jobs read their input
 * and write their output here.
 *
 * <table>
 *   <caption>calls</caption>
 *   <tr><th>call</th><th>answer</th></tr>
 *   <tr><td>{@code PUT} (PutObject)</td><td>200 and an {@code ETag}; a body sent {@code aws-chunked} (the
 *       SDK's streaming checksums) is decoded, its trailing checksum ignored</td></tr>
 *   <tr><td>{@code GET} (GetObject), {@code HEAD}</td><td>the object, or 404 {@code NoSuchKey} in S3's XML</td></tr>
 *   <tr><td>{@code DELETE} (DeleteObject)</td><td>204</td></tr>
 * </table>
 *
 * <p>Thread-safe. Touches no database.
 */
public final class FakeS3 {

    /** The path below an endpoint's base the store answers at. */
    static final String PREFIX = "/s3/";

    private final Map<String, byte[]> objects = new LinkedHashMap<>();

    FakeS3() {}

    /**
     * @param uri an object, {@code s3://bucket/key}
     * @return its content, or empty
     */
    public Optional<byte[]> object(URI uri) {
        String k = key(uri);
        synchronized (objects) {
            byte[] v = objects.get(k);
            return v == null ? Optional.empty() : Optional.of(v.clone());
        }
    }

    /**
     * @param uri an object, {@code s3://bucket/key}
     * @return its content as UTF-8 text, or empty
     */
    public Optional<String> text(URI uri) {
        return object(uri).map(b -> new String(b, StandardCharsets.UTF_8));
    }

    /**
     * Writes an object, as another writer would.
     *
     * @param uri the object, {@code s3://bucket/key}
     * @param content its content
     */
    public void put(URI uri, byte[] content) {
        String k = key(uri);
        synchronized (objects) {
            objects.put(k, content.clone());
        }
    }

    /** @return every object's {@code s3://} URI, in the order written */
    public List<URI> keys() {
        synchronized (objects) {
            return objects.keySet().stream().map(k -> URI.create("s3://" + k)).toList();
        }
    }

    /** Serves one call; {@code path} is {@code /bucket/key...}. */
    void handle(HttpExchange ex, String path, byte[] body) throws IOException {
        String k = path.startsWith("/") ? path.substring(1) : path;
        if (k.indexOf('/') <= 0 || k.endsWith("/")) {
            xml(ex, 400, "InvalidRequest", "The fake S3 serves objects only: /bucket/key.", k);
            return;
        }
        switch (ex.getRequestMethod()) {
            case "PUT" -> {
                byte[] content = decoded(ex, body);
                synchronized (objects) {
                    objects.put(k, content);
                }
                ex.getResponseHeaders().set("ETag", "\"" + md5(content) + "\"");
                ex.sendResponseHeaders(200, -1);
            }
            case "GET", "HEAD" -> {
                byte[] content;
                synchronized (objects) {
                    content = objects.get(k);
                }
                if (content == null) {
                    xml(ex, 404, "NoSuchKey", "The specified key does not exist.", k);
                    return;
                }
                ex.getResponseHeaders().set("Content-Type", "application/octet-stream");
                ex.getResponseHeaders().set("ETag", "\"" + md5(content) + "\"");
                if (ex.getRequestMethod().equals("HEAD")) {
                    ex.getResponseHeaders().set("Content-Length", String.valueOf(content.length));
                    ex.sendResponseHeaders(200, -1);
                    return;
                }
                ex.sendResponseHeaders(200, content.length == 0 ? -1 : content.length);
                if (content.length > 0) {
                    try (OutputStream out = ex.getResponseBody()) {
                        out.write(content);
                    }
                }
            }
            case "DELETE" -> {
                synchronized (objects) {
                    objects.remove(k);
                }
                ex.sendResponseHeaders(204, -1);
            }
            default -> xml(ex, 405, "MethodNotAllowed", "The specified method is not allowed against this resource.", k);
        }
    }

    /**
     * The object's bytes: a body the SDK sent {@code aws-chunked} ({@code <hex size>[;chunk-signature=..]\r\n
     * <bytes>\r\n ... 0\r\n<trailers>\r\n\r\n}) decoded, any other as it came.
     */
    static byte[] decoded(HttpExchange ex, byte[] body) {
        String encoding = Objects.toString(ex.getRequestHeaders().getFirst("Content-Encoding"), "");
        String sha = Objects.toString(ex.getRequestHeaders().getFirst("x-amz-content-sha256"), "");
        if (!encoding.toLowerCase(Locale.ROOT).contains("aws-chunked") && !sha.startsWith("STREAMING-")) {
            return body;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(body.length);
        int at = 0;
        while (at < body.length) {
            int eol = indexOfCrlf(body, at);
            if (eol < 0) {
                throw new IllegalArgumentException("an aws-chunked body is cut short");
            }
            String header = new String(body, at, eol - at, StandardCharsets.ISO_8859_1);
            int semi = header.indexOf(';');
            int size = Integer.parseInt((semi < 0 ? header : header.substring(0, semi)).trim(), 16);
            at = eol + 2;
            if (size == 0) {
                break; // the trailers (a checksum) follow
            }
            out.write(body, at, size);
            at += size + 2;
        }
        return out.toByteArray();
    }

    private static int indexOfCrlf(byte[] b, int from) {
        for (int i = from; i + 1 < b.length; i++) {
            if (b[i] == '\r' && b[i + 1] == '\n') {
                return i;
            }
        }
        return -1;
    }

    private static String key(URI uri) {
        Objects.requireNonNull(uri, "uri");
        if (!"s3".equals(uri.getScheme()) || uri.getAuthority() == null || uri.getPath() == null
                || uri.getPath().length() < 2) {
            throw new IllegalArgumentException("an S3 object is s3://bucket/key, was " + uri);
        }
        return uri.getAuthority() + uri.getPath();
    }

    private static String md5(byte[] content) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("MD5").digest(content));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void xml(HttpExchange ex, int status, String code, String message, String key) throws IOException {
        String body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code + "</Code><Message>" + message
                + "</Message><Key>" + key.replace("&", "&amp;").replace("<", "&lt;") + "</Key>"
                + "<RequestId>fake</RequestId></Error>";
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/xml");
        if (ex.getRequestMethod().equals("HEAD")) {
            ex.sendResponseHeaders(status, -1);
            return;
        }
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }
}
