// The AdmissionReview response envelope (admission.k8s.io/v1). Tiny pure builders,
// so every path, errors included, answers in exactly the shape the apiserver expects.

export const REVIEW_API_VERSION = 'admission.k8s.io/v1';

export interface ReviewStatus {
  /** The apiserver turns codes below 400 into 403; we always send one of ours. */
  code: number;
  message: string;
  reason: string;
  status: 'Failure';
}

export interface AdmissionReviewResponse {
  apiVersion: typeof REVIEW_API_VERSION;
  kind: 'AdmissionReview';
  response: {
    uid: string;
    allowed: boolean;
    patch?: string;
    patchType?: 'JSONPatch';
    status?: ReviewStatus;
  };
}

/** metav1.StatusReason for the codes we send. */
const REASONS: Record<number, string> = {
  400: 'BadRequest',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'AlreadyExists',
  413: 'RequestEntityTooLarge',
  422: 'Invalid',
  500: 'InternalError',
};

export const reasonFor = (code: number): string => REASONS[code] ?? (code >= 500 ? 'InternalError' : 'BadRequest');

export function allow(uid: string, patch?: string): AdmissionReviewResponse {
  const response: AdmissionReviewResponse['response'] = { uid, allowed: true };
  if (patch) Object.assign(response, { patch, patchType: 'JSONPatch' });
  return { apiVersion: REVIEW_API_VERSION, kind: 'AdmissionReview', response };
}

export function deny(uid: string, code: number, message: string): AdmissionReviewResponse {
  return {
    apiVersion: REVIEW_API_VERSION,
    kind: 'AdmissionReview',
    response: { uid, allowed: false, status: { code, message, reason: reasonFor(code), status: 'Failure' } },
  };
}
