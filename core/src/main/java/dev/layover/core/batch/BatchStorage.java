package dev.layover.core.batch;

import java.io.InputStream;
import java.net.URI;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Where a batch transport whose provider reads its input from object storage and writes its output
 * there ({@link BedrockBatches}: Amazon S3) puts and reads its files. {@link S3BatchStorage} is the
 * one on AWS SDK v2's {@code S3Client}; implement this interface to write the files another way
 * (a transfer manager, a cross-account client, encryption of your own).
 *
 * <p>Called only from Layover's batch loop thread, never inside a database transaction. An
 * exception is logged by the loop and the step is tried again later.
 */
public interface BatchStorage {

    /**
     * Writes a file to an object, replacing it when it exists.
     *
     * @param uri the object, e.g. {@code s3://bucket/layover/lo-batch-12/input.jsonl}
     * @param file the file to write; the caller deletes it afterwards
     * @throws Exception when the object cannot be written
     */
    void put(URI uri, Path file) throws Exception;

    /**
     * Opens an object for reading; the caller closes the stream.
     *
     * @param uri the object
     * @return its content, or empty when there is no such object
     * @throws Exception when the storage cannot be reached
     */
    Optional<InputStream> open(URI uri) throws Exception;
}
