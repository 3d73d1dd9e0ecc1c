package dev.layover.core.batch;

import java.io.InputStream;
import java.net.URI;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * {@link BatchStorage} on AWS SDK v2's {@code S3Client} (an optional dependency of core: only this
 * class refers to it): {@code PutObject} and {@code GetObject} of {@code s3://bucket/key} URIs.
 *
 * <pre>{@code
 * BatchStorage s3 = S3BatchStorage.of(S3Client.builder().region(Region.US_EAST_1).build());
 * }</pre>
 *
 * The client's credentials need {@code s3:PutObject} and {@code s3:GetObject} on the batch location;
 * the role Bedrock runs the job with needs to read the input and write the output there. Immutable
 * and thread-safe; the client's retries are its own.
 */
public final class S3BatchStorage implements BatchStorage {

    private final S3Client s3;

    private S3BatchStorage(S3Client s3) {
        this.s3 = s3;
    }

    /**
     * Storage on {@code s3}.
     *
     * @param s3 the client; not {@code null}
     * @return the storage
     */
    public static S3BatchStorage of(S3Client s3) {
        return new S3BatchStorage(Objects.requireNonNull(s3, "s3"));
    }

    /** {@code PutObject} of the file, content type {@code application/jsonl}. */
    @Override
    public void put(URI uri, Path file) {
        Location at = Location.of(uri);
        s3.putObject(PutObjectRequest.builder().bucket(at.bucket()).key(at.key()).contentType("application/jsonl").build(),
                RequestBody.fromFile(file));
    }

    /** {@code GetObject}; empty on {@code NoSuchKey}. */
    @Override
    public Optional<InputStream> open(URI uri) {
        Location at = Location.of(uri);
        try {
            return Optional.of(s3.getObject(GetObjectRequest.builder().bucket(at.bucket()).key(at.key()).build()));
        } catch (NoSuchKeyException e) {
            return Optional.empty();
        }
    }

    /** An {@code s3://bucket/key} URI's parts. */
    record Location(String bucket, String key) {
        static Location of(URI uri) {
            Objects.requireNonNull(uri, "uri");
            String path = uri.getPath() == null ? "" : uri.getPath();
            if (!"s3".equals(uri.getScheme()) || uri.getAuthority() == null || path.length() < 2) {
                throw new IllegalArgumentException("an S3 object is s3://bucket/key, was " + uri);
            }
            return new Location(uri.getAuthority(), path.substring(1));
        }
    }
}
