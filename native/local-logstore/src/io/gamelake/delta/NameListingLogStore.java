package io.gamelake.delta;

import io.delta.storage.LocalLogStore;
import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Delta's log store for the local disk ({@link LocalLogStore}) with a listing that reads the
 * status of only the entries it returns.
 *
 * <p>Delta lists a table's {@code _delta_log} from a version on, for almost every statement.
 * Hadoop's listing of a local folder reads the status of every entry (several system calls each,
 * about 15 µs), and Delta then drops the entries before that version: a table keeps hours of
 * commits and checkpoints, four entries a commit, of which a statement needs the last few. This
 * lists the names (one directory read), keeps those at or after the start, and reads only their
 * status.
 */
public class NameListingLogStore extends LocalLogStore {
  public NameListingLogStore(Configuration hadoopConf) {
    super(hadoopConf);
  }

  @Override
  public Iterator<FileStatus> listFrom(Path path, Configuration hadoopConf) throws IOException {
    FileSystem fs = path.getFileSystem(hadoopConf);
    if (!(fs instanceof LocalFileSystem)) {
      return super.listFrom(path, hadoopConf);
    }
    Path parent = path.getParent();
    File folder = ((LocalFileSystem) fs).pathToFile(parent);
    String[] names = folder.list();
    if (names == null) {
      if (!folder.isDirectory()) {
        throw new FileNotFoundException("No such file or directory: " + parent);
      }
      throw new IOException("Could not list " + parent);
    }
    String start = path.getName();
    Arrays.sort(names);
    List<FileStatus> from = new ArrayList<>();
    for (String name : names) {
      if (name.compareTo(start) < 0 || isChecksum(name)) {
        continue;
      }
      try {
        from.add(fs.getFileStatus(new Path(parent, name)));
      } catch (FileNotFoundException removed) {
        // a log cleanup removed it after the names were read: as if listed a moment later
      }
    }
    return from.iterator();
  }

  /** Hadoop's checksum of a local file, which its own listing leaves out. */
  private static boolean isChecksum(String name) {
    return name.startsWith(".") && name.endsWith(".crc");
  }
}
