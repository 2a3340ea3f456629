import { EnvelopeError } from '../errors/index.ts';
import { encodePointer } from '../pointer/json-pointer.ts';

/**
 * CONFIG_INVALID for the member at `path` of a configuration, worded like the
 * schema's errors: the file (when known), the JSON Pointer, then what is wrong there.
 */
export function configInvalid(
  message: string,
  path: readonly (string | number)[],
  file?: string,
): EnvelopeError {
  const pointer = encodePointer(path);
  return new EnvelopeError(
    'CONFIG_INVALID',
    `${file === undefined ? '' : `${file}: `}${pointer} ${message}`,
    {
      pointer,
      ...(file === undefined ? {} : { path: file }),
    },
  );
}
