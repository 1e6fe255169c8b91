import { describe, expect, it } from 'vitest';
import { credentialSecrets, parseAwsCredentials, regionOfEndpoint } from './bedrock-credentials.js';

describe('Bedrock credentials from the vault', () => {
  it('when the value is the documented JSON, its parts are read; anything else is no credentials', () => {
    expect(
      parseAwsCredentials('{"access_key_id":"AKIA1","secret_access_key":"s","region":"eu-west-1"}'),
    ).toEqual({ access_key_id: 'AKIA1', secret_access_key: 's', region: 'eu-west-1' });
    expect(parseAwsCredentials('sk-not-aws')).toBeUndefined();
    expect(parseAwsCredentials('{"access_key_id":"AKIA1"}')).toBeUndefined();
    expect(
      parseAwsCredentials('{"access_key_id":"AKIA1","secret_access_key":"s","region":"nowhere"}'),
    ).toBeUndefined();
    expect(parseAwsCredentials('{not json')).toBeUndefined();
    expect(credentialSecrets('sk-plain')).toEqual([]);
  });

  it('when the endpoint is a regional, FIPS or VPC endpoint, its region is read from the host; a loopback one has none', () => {
    expect(regionOfEndpoint('https://bedrock-runtime.eu-west-1.amazonaws.com')).toBe('eu-west-1');
    expect(regionOfEndpoint('https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com')).toBe(
      'us-gov-west-1',
    );
    expect(regionOfEndpoint('https://vpce-0a1b-c2d3.bedrock-runtime.ap-southeast-2.vpce.amazonaws.com')).toBe(
      'ap-southeast-2',
    );
    expect(regionOfEndpoint('http://127.0.0.1:4010')).toBeUndefined();
  });
});
