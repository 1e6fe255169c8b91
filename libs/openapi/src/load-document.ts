// The one module of this package that touches the file system: reads an OpenAPI document from disk
// and bundles the files its relative `$ref`s name. Files outside the document's root folder (by real
// path, so symlinks cannot escape) are refused, and non-file URLs are never fetched.

import { readFile, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { bundleDocument, type BundleResult } from './bundle.js';
import { DocumentParseError, ExternalReferenceError } from './errors.js';
import { parseDocumentText } from './parse-document.js';

export interface LoadDocumentOptions {
  /** Folder external files must be inside; defaults to the entry document's folder. */
  readonly root?: string;
  /** Most files read for one document. */
  readonly maxFiles?: number;
}

/** Reads `entryPath` and every file its relative `$ref`s reach, as one self-contained document. */
export async function loadDocument(
  entryPath: string,
  options: LoadDocumentOptions = {},
): Promise<BundleResult> {
  const entry = resolve(entryPath);
  const root = await realpath(resolve(options.root ?? dirname(entry))).catch((error: unknown) => {
    throw new DocumentParseError(
      `root folder of ${entryPath} cannot be read`,
      { entryPath },
      { cause: error },
    );
  });
  const document = await readDocumentFile(entry);
  return bundleDocument(document, {
    baseUri: pathToFileURL(entry).href,
    maxFiles: options.maxFiles,
    load: async (uri) => {
      if (!uri.startsWith('file:'))
        throw new ExternalReferenceError(`only local files are read, not ${uri}`, { uri });
      const file = await realpath(fileURLToPath(uri)).catch((error: unknown) => {
        throw new ExternalReferenceError(`file not found: ${uri}`, { uri }, { cause: error });
      });
      const fromRoot = relative(root, file);
      if (fromRoot.startsWith(`..${sep}`) || fromRoot === '..' || isAbsolute(fromRoot)) {
        throw new ExternalReferenceError(`${uri} is outside the document's folder`, { uri });
      }
      return readDocumentFile(file);
    },
  });
}

/** Reads and parses one JSON or YAML file. */
export async function readDocumentFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new DocumentParseError(`cannot read ${path}`, { path }, { cause: error });
  }
  return parseDocumentText(text, path);
}
