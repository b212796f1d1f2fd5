package io.gamelake.delta;

import io.delta.storage.HadoopFileSystemLogStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSDataOutputStreamBuilder;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A Delta log store for S3 that is safe with writers on many hosts: a new version of the log is
 * created with a conditional put ({@code If-None-Match: *}), so of two writers racing for one
 * version exactly one succeeds and the other sees {@link java.nio.file.FileAlreadyExistsException},
 * on which Delta checks for conflicts and retries at the next version.
 *
 * <p>delta-rs creates versions the same way, so Spark and the ingest can commit to one table.
 * Delta 4.4's own {@code S3SingleDriverLogStore} locks within one JVM only.
 */
public final class ConditionalPutLogStore extends HadoopFileSystemLogStore {
  /** Hadoop 3.4.2+'s createFile() option that makes S3A send {@code If-None-Match: *}. */
  static final String CONDITIONAL_CREATE = "fs.option.create.conditional.overwrite";
  /** Skips S3A's HEAD and LIST before the put: the condition already refuses an existing version. */
  static final String NO_EXISTENCE_CHECK = "fs.s3a.create.performance";

  public ConditionalPutLogStore(Configuration hadoopConf) {
    super(hadoopConf);
  }

  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
      throws IOException {
    FileSystem fs = path.getFileSystem(hadoopConf);
    FSDataOutputStreamBuilder<?, ?> builder = fs.createFile(path).overwrite(overwrite);
    if (!overwrite) {
      builder = builder.must(CONDITIONAL_CREATE, true).opt(NO_EXISTENCE_CHECK, true);
    }
    try (FSDataOutputStream out = builder.build()) {
      while (actions.hasNext()) {
        out.write((actions.next() + "\n").getBytes(StandardCharsets.UTF_8));
      }
    } catch (org.apache.hadoop.fs.FileAlreadyExistsException | org.apache.hadoop.fs.s3a.RemoteFileChangedException e) {
      // The create-time check, or the put's 412 when another writer won the race.
      if (overwrite) {
        throw e;
      }
      java.nio.file.FileAlreadyExistsException lost =
          new java.nio.file.FileAlreadyExistsException(path.toString());
      lost.initCause(e);
      throw lost;
    }
  }

  @Override
  public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) {
    return false; // a PUT shows the whole object or nothing
  }
}
