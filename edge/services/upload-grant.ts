/**
 * Upload grants live in shared/upload-grant.ts (the edge issues them, the GPU node verifies them
 * on `/v1/imports*`); re-exported here for the edge's existing imports.
 */
export {
  createUploadGrant,
  UPLOAD_GRANT_HEADER,
  UPLOAD_GRANT_PREFIX,
  type UploadGrantClaims,
  verifyUploadGrant,
} from "../../shared/upload-grant.js";
